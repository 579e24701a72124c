#!/usr/bin/python3
"""Makes image datasets to test an image data path. Usage:

  make-image-data.py fashion-png OUT [--source DIR] [--limit N]
      Fashion-MNIST from Debian's dataset-fashion-mnist package as PNG files:
      OUT/{train,test}/<class>/<index>.png, 8-bit grayscale. A class folder is named
      "<label>-<name>" ("0-tshirt" .. "9-boot"), so folders sorted by name are in label
      order. A file is named by the record's index in its idx file ("00042.png"), so it
      can be matched back to it. --limit writes only the first N records of each split.
  make-image-data.py synthetic OUT [--classes 100] [--per-class 200] [--test-per-class 20]
                     [--min-side 200] [--max-side 500] [--quality 90]
      An ImageNet-shaped folder: OUT/{train,val}/<class>/<index>.jpg, classes "c000",
      "c001" .. (more digits past 1000 classes, so that name order stays label order),
      JPEGs of random width and height in [min-side, max-side].
  make-image-data.py cifar OUT [--records 1000] [--hundred] [--from DIR]
      The CIFAR-10 binary format: OUT/data_batch_1.bin .. data_batch_5.bin and
      OUT/test_batch.bin, --records records each, a record being a label byte and 3072
      bytes (the red plane, then green, then blue, each 32x32 row-major). With --hundred
      the CIFAR-100 one: OUT/train.bin (5 * records) and OUT/test.bin (records), a record
      being a coarse label byte (fine // 5), a fine label byte and the same 3072 bytes.
  make-image-data.py npy OUT [--records 1000] [--test-records N] [--layout nhwc|nchw]
                     [--dtype uint8|float32] [--npz] [--side 32]
      OUT/images.npy, OUT/labels.npy, OUT/test_images.npy and OUT/test_labels.npy (with
      --npz, OUT/data.npz holding arrays of those names): RGB images of side x side
      (32x32 by default), uint8 or float32 in [0, 1], and int64 labels 0..9.

cifar and npy draw the synthetic images at 32x32 (npy: at --side) and 10 classes (100
with --hundred).
cifar --from DIR takes its images from an image folder instead (DIR/train and DIR/test
or DIR/val, as fashion-png and synthetic write them): shorter side to 32, centre crop,
RGB, labels by class folder in name order, the records drawn at random (--seed).

The synthetic images are meant to be learnt at low resolution: each class has a kind of
pattern (circles, squares, triangles, rings, stripes, checkerboard), a palette no other
class of its kind has (background and foreground hues, light or dark background, hues growing
closer past 108 classes) and its own sizes, angles and frequencies, the pattern repeated
over the image so that a random crop of it still shows the class. One function draws
them all (render), from an RNG seeded by (seed, split, class, index): a given image is
the same whichever command draws it, and cifar's and npy's are the synthetic one scaled
to 32x32 (their test records being images of the val split).

Everything follows from --seed. A dataset is written into OUT.tmp-PID and renamed to OUT
when complete; an existing OUT is refused unless --force. Each command prints one JSON
line of what it wrote."""
import argparse
import colorsys
import contextlib
import gzip
import json
import math
import multiprocessing
import os
import shutil
import sys
import time

import numpy as np
from PIL import Image, ImageDraw

FASHION_CLASSES = ["0-tshirt", "1-trouser", "2-pullover", "3-dress", "4-coat", "5-sandal", "6-shirt", "7-sneaker",
                   "8-bag", "9-boot"]
SPLITS = {"train": 0, "val": 1}  # the split's part of an image's seed
KINDS = ["circles", "squares", "triangles", "rings", "stripes", "checker"]
GOLDEN = 0.6180339887  # steps hues and sizes so that neighbouring classes differ most


def fail(message):
    sys.exit(f"make-image-data: {message}")


@contextlib.contextmanager
def atomic_dir(out, force):
    """A fresh directory that becomes OUT only once everything is written."""
    out = os.path.abspath(out)
    if os.path.lexists(out) and not force:
        fail(f"{out} exists (--force replaces it)")
    tmp = f"{out}.tmp-{os.getpid()}"
    os.makedirs(tmp)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if os.path.lexists(out):
        shutil.rmtree(out)
    os.rename(tmp, out)


def pool_map(fn, tasks, threads):
    """fn over tasks in order, in `threads` processes (in this one when 1)."""
    if threads <= 1:
        return [fn(t) for t in tasks]
    with multiprocessing.Pool(threads) as pool:
        return list(pool.imap(fn, tasks))


def chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


# Fashion-MNIST as PNG files

IDX = {}  # split -> (images, labels); set before the pool starts, so its workers share them


def read_idx(path):
    """A gzip'd idx file as a numpy array: a magic number whose last byte is the rank,
    then one big-endian u32 a dimension, then the data (unsigned bytes here)."""
    try:
        with gzip.open(path) as f:
            b = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror or e}")
    if b[:3] != b"\0\0\x08":
        fail(f"{path} is not an idx file of unsigned bytes")
    rank = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(b, np.uint8, offset=4 + 4 * rank).reshape(dims)


def write_pngs(task):
    out, split, start, end = task
    images, labels = IDX[split]
    for i in range(start, end):
        Image.fromarray(images[i], "L").save(os.path.join(out, split, FASHION_CLASSES[labels[i]], f"{i:05d}.png"))
    return end - start


def fashion_png(a):
    counts = {}
    with atomic_dir(a.out, a.force) as tmp:
        tasks = []
        for split, prefix in (("train", "train"), ("test", "t10k")):
            images = read_idx(os.path.join(a.source, f"{prefix}-images-idx3-ubyte.gz"))
            labels = read_idx(os.path.join(a.source, f"{prefix}-labels-idx1-ubyte.gz"))
            if len(images) != len(labels):
                fail(f"{split}: {len(images)} images but {len(labels)} labels")
            IDX[split] = images, labels
            n = len(images) if a.limit is None else min(a.limit, len(images))
            counts[split] = n
            for name in FASHION_CLASSES:
                os.makedirs(os.path.join(tmp, split, name))
            tasks += [(tmp, split, s, min(s + 500, n)) for s in range(0, n, 500)]
        pool_map(write_pngs, tasks, a.threads)
    return {"out": os.path.abspath(a.out), "train": counts["train"], "test": counts["test"]}


# The synthetic images

def hsv(h, s, v):
    return tuple(int(round(255 * c)) for c in colorsys.hsv_to_rgb(h % 1.0, s, v))


def style(seed, cls):
    """A class's look, the same in every split: its kind of pattern, palette and the
    pattern's size, angle and density. Classes of one kind differ by palette first
    (background hue in golden-ratio steps, light or dark background), then by those
    parameters. Classes of neighbouring kinds that share a background hue differ in
    lightness and foreground hue too, as a small crop may not show the shapes whole."""
    k = cls % len(KINDS)
    j = cls // len(KINDS)
    turn = np.random.default_rng([seed, 1 << 30]).uniform()  # every class's hues turn with the seed
    bg_hue = (turn + (j // 2) * GOLDEN) % 1.0
    step = (j * GOLDEN) % 1.0
    return {
        "kind": KINDS[k],
        "bg_hue": bg_hue,
        "fg_hue": bg_hue + (0.5, 0.33, 0.67)[k % 3],
        "dark": (j + k) % 2 == 1,
        "scale": 0.06 + 0.10 * step,  # of the shorter side: shape radius, stripe period, cell side
        "angle": 180.0 * ((j * 0.3819660113 + cls * 0.05) % 1.0),  # degrees
        "fill": 0.25 + 0.2 * ((j * 0.7548776662) % 1.0),  # of the area shapes cover
    }


def render(seed, split, cls, index, min_side=200, max_side=500, size=None):
    """Image `index` of class `cls` in `split`: RGB, of a random width and height in
    [min_side, max_side], scaled to size x size when size is given."""
    rng = np.random.default_rng([seed, SPLITS[split], cls, index])
    st = style(seed, cls)
    w, h = (int(x) for x in rng.integers(min_side, max_side + 1, 2))
    short = min(w, h)

    def jitter(x):
        return float(rng.uniform(-x, x))

    if st["dark"]:
        bg = hsv(st["bg_hue"] + jitter(0.02), rng.uniform(0.55, 0.9), rng.uniform(0.15, 0.3))
        fg = hsv(st["fg_hue"] + jitter(0.02), rng.uniform(0.55, 0.9), rng.uniform(0.8, 0.95))
    else:
        bg = hsv(st["bg_hue"] + jitter(0.02), rng.uniform(0.35, 0.6), rng.uniform(0.8, 0.95))
        fg = hsv(st["fg_hue"] + jitter(0.02), rng.uniform(0.7, 0.95), rng.uniform(0.3, 0.45))
    img = Image.new("RGB", (w, h), bg)
    draw = ImageDraw.Draw(img)
    kind, scale = st["kind"], st["scale"] * (1 + jitter(0.15))
    angle = math.radians(st["angle"] + jitter(5))
    if kind in ("circles", "squares", "triangles", "rings"):
        r = scale * short
        count = max(3, min(80, int(st["fill"] * w * h / (math.pi * r * r))))
        for _ in range(count):
            cx, cy = rng.uniform(-r, w + r), rng.uniform(-r, h + r)
            rr = r * rng.uniform(0.7, 1.3)
            if kind == "circles":
                draw.ellipse([cx - rr, cy - rr, cx + rr, cy + rr], fill=fg)
            elif kind == "rings":
                draw.ellipse([cx - rr, cy - rr, cx + rr, cy + rr], outline=fg, width=max(1, int(rr * 0.3)))
            else:
                n = 4 if kind == "squares" else 3
                a0 = angle + jitter(0.1)
                turns = [a0 + 2 * math.pi * k / n for k in range(n)]
                draw.polygon([(cx + rr * math.cos(t), cy + rr * math.sin(t)) for t in turns], fill=fg)
    elif kind == "stripes":
        period = max(4.0, scale * short * 1.5)
        nx, ny, dx, dy = math.cos(angle), math.sin(angle), -math.sin(angle), math.cos(angle)
        half = math.hypot(w, h) / 2 + period
        t = -half + rng.uniform(0, period)
        while t < half:
            band = []
            for off in (t, t + period / 2):
                px, py = w / 2 + nx * off, h / 2 + ny * off
                band += [(px - dx * half, py - dy * half), (px + dx * half, py + dy * half)]
            draw.polygon([band[0], band[1], band[3], band[2]], fill=fg)
            t += period
    else:  # checker
        cell = max(3, int(round(scale * short)))
        ox, oy = (int(x) for x in rng.integers(0, 2 * cell, 2))
        for row, y in enumerate(range(-oy, h, cell)):
            for col, x in enumerate(range(-ox, w, cell)):
                if (row + col) % 2 == 0:
                    draw.rectangle([x, y, x + cell - 1, y + cell - 1], fill=fg)
    pixels = np.asarray(img, np.float32) + rng.standard_normal((h, w, 3), np.float32) * 6
    img = Image.fromarray(np.clip(pixels + 0.5, 0, 255).astype(np.uint8), "RGB")
    if size:
        img = img.resize((size, size), Image.BILINEAR)
    return img


def class_name(cls, classes):
    return f"c{cls:0{max(3, len(str(classes - 1)))}d}"


def write_jpegs(task):
    tmp, seed, items, classes, min_side, max_side, quality = task
    for split, cls, index in items:
        render(seed, split, cls, index, min_side, max_side).save(
            os.path.join(tmp, split, class_name(cls, classes), f"{index:05d}.jpg"), quality=quality)
    return len(items)


def synthetic(a):
    if not 1 <= a.min_side <= a.max_side:
        fail("--min-side must be at least 1 and at most --max-side")
    with atomic_dir(a.out, a.force) as tmp:
        items = []
        for split, per in (("train", a.per_class), ("val", a.test_per_class)):
            for cls in range(a.classes):
                os.makedirs(os.path.join(tmp, split, class_name(cls, a.classes)))
                items += [(split, cls, i) for i in range(per)]
        tasks = [(tmp, a.seed, c, a.classes, a.min_side, a.max_side, a.quality) for c in chunks(items, 32)]
        pool_map(write_jpegs, tasks, a.threads)
    return {"out": os.path.abspath(a.out), "classes": a.classes, "train": a.classes * a.per_class,
            "val": a.classes * a.test_per_class}


def draw_small(task):
    seed, items, side = task
    return np.stack([np.asarray(render(seed, split, cls, index, size=side)) for split, cls, index in items])


def synthetic_set(seed, split, n, classes, threads, side=32):
    """n synthetic side x side images (uint8, n x side x side x 3) and their labels: item i
    of the split is image i // classes of class i % classes, so the classes are balanced,
    and the items come in an order drawn from the seed."""
    order = np.random.default_rng([seed, SPLITS[split], 1 << 30]).permutation(n)
    labels = order % classes
    items = [(split, int(i % classes), int(i // classes)) for i in order]
    images = np.concatenate(pool_map(draw_small, [(seed, c, side) for c in chunks(items, 64)], threads)) if n else \
        np.zeros((0, side, side, 3), np.uint8)
    return images, labels.astype(np.int64)


def image_folder(root):
    """(path, label) of every image in an image folder, classes in name order."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return classes, [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
                     for f in sorted(os.listdir(os.path.join(root, c)))
                     if f.lower().endswith((".jpg", ".jpeg", ".png"))]


def load_small(paths):
    out = []
    for path in paths:
        with Image.open(path) as im:
            im = im.convert("RGB")
            w, h = im.size
            s = 32 / min(w, h)
            im = im.resize((max(32, int(w * s)), max(32, int(h * s))), Image.BILINEAR)
            w, h = im.size
            left, top = int(round((w - 32) / 2)), int(round((h - 32) / 2))
            out.append(np.asarray(im.crop((left, top, left + 32, top + 32))))
    return np.stack(out)


def folder_set(root, split, n, classes_max, seed, threads):
    """n images of an image folder's split, drawn at random, as 32x32 RGB, and labels."""
    for name in ((split,) if split == "train" else ("test", "val")):
        if os.path.isdir(os.path.join(root, name)):
            break
    else:
        fail(f"{root} has no {split} folder")
    classes, files = image_folder(os.path.join(root, name))
    if len(classes) > classes_max:
        fail(f"{root}/{name} has {len(classes)} classes; this format holds {classes_max}")
    if len(files) < n:
        fail(f"{root}/{name} has {len(files)} images; {n} are asked for")
    pick = np.random.default_rng([seed, SPLITS[split], 1 << 31]).permutation(len(files))[:n]
    chosen = [files[i] for i in pick]
    images = np.concatenate(pool_map(load_small, chunks([p for p, _ in chosen], 64), threads))
    return images, np.array([label for _, label in chosen], np.int64)


def cifar(a):
    classes = 100 if a.hundred else 10
    sets = {}
    for split, n in (("train", 5 * a.records), ("val", a.records)):
        sets[split] = (folder_set(a.source, split, n, classes, a.seed, a.threads) if a.source else
                       synthetic_set(a.seed, split, n, classes, a.threads))
    with atomic_dir(a.out, a.force) as tmp:
        def write(name, images, labels):
            planes = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)  # R, G, B planes, each row-major
            heads = [labels // 5, labels] if a.hundred else [labels]
            records = np.concatenate([np.stack(heads, 1).astype(np.uint8), planes], 1)
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(records.tobytes())
            return name

        (x, y), (tx, ty) = sets["train"], sets["val"]
        if a.hundred:
            files = [write("train.bin", x, y), write("test.bin", tx, ty)]
        else:
            files = [write(f"data_batch_{b + 1}.bin", x[b * a.records:(b + 1) * a.records],
                           y[b * a.records:(b + 1) * a.records]) for b in range(5)]
            files.append(write("test_batch.bin", tx, ty))
    return {"out": os.path.abspath(a.out), "format": "cifar-100" if a.hundred else "cifar-10", "files": files,
            "train": len(x), "test": len(tx), "source": os.path.abspath(a.source) if a.source else "synthetic"}


def npy(a):
    test_records = a.records if a.test_records is None else a.test_records
    arrays = {}
    for prefix, split, n in (("", "train", a.records), ("test_", "val", test_records)):
        images, labels = synthetic_set(a.seed, split, n, 10, a.threads, a.side)
        if a.layout == "nchw":
            images = np.ascontiguousarray(images.transpose(0, 3, 1, 2))
        if a.dtype == "float32":
            images = images.astype(np.float32) / 255
        arrays[prefix + "images"], arrays[prefix + "labels"] = images, labels
    with atomic_dir(a.out, a.force) as tmp:
        if a.npz:
            np.savez(os.path.join(tmp, "data.npz"), **arrays)
            files = ["data.npz"]
        else:
            files = []
            for name, array in arrays.items():
                np.save(os.path.join(tmp, name + ".npy"), array)
                files.append(name + ".npy")
    return {"out": os.path.abspath(a.out), "files": files, "train": a.records, "test": test_records,
            "shape": list(arrays["images"].shape), "layout": a.layout, "dtype": a.dtype}


def main():
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--threads", type=int, default=os.cpu_count(), help="processes (default: one a CPU)")
    common.add_argument("--force", action="store_true", help="replace OUT if it exists")
    seeded = argparse.ArgumentParser(add_help=False)
    seeded.add_argument("--seed", type=int, default=1)
    ap = argparse.ArgumentParser(description=__doc__.split(" Usage:")[0])
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fashion-png", parents=[common], help="Fashion-MNIST as PNG files in class folders")
    p.add_argument("out")
    p.add_argument("--source", default="/usr/share/datasets/fashion-mnist", help="the idx files' directory")
    p.add_argument("--limit", type=int, help="only the first N records of each split")
    p.set_defaults(fn=fashion_png)

    p = sub.add_parser("synthetic", parents=[common, seeded], help="an ImageNet-shaped folder of JPEGs")
    p.add_argument("out")
    p.add_argument("--classes", type=int, default=100)
    p.add_argument("--per-class", type=int, default=200, help="training images a class")
    p.add_argument("--test-per-class", type=int, default=20, help="validation images a class")
    p.add_argument("--min-side", type=int, default=200)
    p.add_argument("--max-side", type=int, default=500)
    p.add_argument("--quality", type=int, default=90, help="JPEG quality")
    p.set_defaults(fn=synthetic)

    p = sub.add_parser("cifar", parents=[common, seeded], help="CIFAR-10 (or -100) binary batch files")
    p.add_argument("out")
    p.add_argument("--from", dest="source", metavar="DIR", help="images from this image folder, not synthetic ones")
    p.add_argument("--records", type=int, default=1000, help="records a data batch file, and in the test file")
    p.add_argument("--hundred", action="store_true", help="CIFAR-100's format: train.bin and test.bin")
    p.set_defaults(fn=cifar)

    p = sub.add_parser("npy", parents=[common, seeded], help="numpy arrays of RGB images and labels")
    p.add_argument("out")
    p.add_argument("--records", type=int, default=1000, help="training records")
    p.add_argument("--test-records", type=int, help="test records (default: --records)")
    p.add_argument("--layout", choices=["nhwc", "nchw"], default="nhwc")
    p.add_argument("--dtype", choices=["uint8", "float32"], default="uint8", help="float32 is scaled to [0, 1]")
    p.add_argument("--npz", action="store_true", help="one data.npz instead of .npy files")
    p.add_argument("--side", type=int, default=32, help="the images' width and height")
    p.set_defaults(fn=npy)

    a = ap.parse_args()
    for name in ("limit", "classes", "per_class", "test_per_class", "records", "test_records"):
        if getattr(a, name, None) is not None and getattr(a, name) < 0:
            fail(f"--{name.replace('_', '-')} must not be negative")
    if getattr(a, "classes", 1) < 1:
        fail("--classes must be at least 1")
    start = time.perf_counter()
    out = a.fn(a)
    out["seconds"] = round(time.perf_counter() - start, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
