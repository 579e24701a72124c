#!/usr/bin/python3
"""The deep auto-encoder's pictures and figures, as SINGA's Fig. 16 shows them:
the bottom RBM's weights as a grid of 28×28 filters, and the 2-D codes of the test
set coloured by class; beside them each stage's reconstruction errors (from the
workers' own records) and the test set's error of the fine-tuned net against a
2-component PCA's on the same data (numpy).

  figures.py OUT   reads OUT/{rbm1..rbm4,finetune}/ (runs) and OUT/*.npz (dl-ckpt export),
                   writes OUT/figures/{rbm1-filters.png,codes.png,summary.json}"""
import gzip, json, os, sys

import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

DATA = os.environ.get("SHOAL_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
STAGES = ["rbm1", "rbm2", "rbm3", "rbm4", "finetune"]


def idx(name):
    with gzip.open(os.path.join(DATA, name)) as f:
        b = f.read()
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(b[3])]
    return np.frombuffer(b, np.uint8, offset=4 + 4 * b[3]).reshape(dims)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def stage_errors(run_dir, train_records):
    """Each epoch's mean training reconstruction error (worker 0's display windows)
    and the test set's at the end, from the run's records."""
    with open(os.path.join(run_dir, "worker-0.jsonl")) as f:
        records = [json.loads(l) for l in f if l.startswith("{")]
    with open(os.path.join(run_dir, "plan.json")) as f:
        job = json.load(f)["job"]
    per_epoch = train_records / (job["train"]["batch_size"] * job["cluster"]["nworkers_per_group"])
    steps = [r for r in records if r.get("event") == "step"]
    done = [r for r in records if r.get("event") == "done"][-1]
    epochs = {}
    for r in steps:
        epochs.setdefault(int((r["step"] - 1) // per_epoch), []).append(r["loss"])
    return {"train_per_epoch": [float(np.mean(v)) for _, v in sorted(epochs.items())], "test": done["test_loss"]}


def main(out):
    figures = os.path.join(out, "figures")
    os.makedirs(figures, exist_ok=True)
    xt = idx("t10k-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float64) / 255.0
    yt = idx("t10k-labels-idx1-ubyte.gz")
    x = idx("train-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float64) / 255.0

    rbm1 = np.load(os.path.join(out, "rbm1.npz"))["rbm1.weight"]
    grid = np.ones((10 * 29 + 1, 10 * 29 + 1))
    for k in range(100):
        w = rbm1[k].reshape(28, 28)
        w = (w - w.min()) / (w.max() - w.min() + 1e-12)
        r, c = divmod(k, 10)
        grid[1 + 29 * r:29 * (r + 1), 1 + 29 * c:29 * (c + 1)] = w
    plt.figure(figsize=(6, 6))
    plt.imshow(grid, cmap="gray")
    plt.axis("off")
    plt.title("RBM 1: the first 100 hidden units' weights")
    plt.savefig(os.path.join(figures, "rbm1-filters.png"), dpi=100, bbox_inches="tight")
    plt.close()

    # The fine-tuned encoder and decoder, in numpy.
    p = np.load(os.path.join(out, "finetune.npz"))
    h = xt
    for name in ("enc1", "enc2", "enc3"):
        h = sigmoid(h @ p[f"{name}.weight"].T + p[f"{name}.bias"])
    code = h @ p["code.weight"].T + p["code.bias"]
    r = code
    for name in ("dec4", "dec3", "dec2", "dec1"):
        r = sigmoid(r @ p[f"{name}.weight"].T + p[f"{name}.bias"])
    autoencoder_error = float(((xt - r) ** 2).sum(1).mean())

    plt.figure(figsize=(7, 6))
    for c in range(10):
        pick = yt == c
        plt.scatter(code[pick, 0], code[pick, 1], s=2, label=CLASSES[c], alpha=0.6)
    plt.legend(markerscale=5, fontsize=7, loc="best")
    plt.title("784-1000-500-250-2 auto-encoder: test set codes by class")
    plt.savefig(os.path.join(figures, "codes.png"), dpi=100, bbox_inches="tight")
    plt.close()

    # The top two principal directions: the covariance's eigenvectors of the largest
    # eigenvalues (the SVD of the centred images gives the same plane, far more slowly).
    mean = x.mean(0)
    centred = x - mean
    _, vectors = np.linalg.eigh(centred.T @ centred)
    basis = vectors[:, ::-1][:, :2].T
    pca = (xt - mean) @ basis.T @ basis + mean
    pca_error = float(((xt - pca) ** 2).sum(1).mean())

    summary = {"stages": {s: stage_errors(os.path.join(out, s), len(x)) for s in STAGES},
               "autoencoder_test_error": autoencoder_error, "pca2_test_error": pca_error,
               "figures": ["rbm1-filters.png", "codes.png"]}
    with open(os.path.join(figures, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps({"autoencoder_test_error": autoencoder_error, "pca2_test_error": pca_error}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out")
