#!/usr/bin/python3
"""Python reference for sharding an image folder: PIL and numpy in N processes do the
work an image sharding tool does, for the bench to compare it with.

  pil_shard.py DIR --out OUT [--resize S] [--center-crop C] [--store raw|jpeg]
               [--quality Q] [--threads N]

DIR is an image folder: DIR/<class>/*.{jpg,jpeg,png}, classes in name order (a class's
label is its place in that order), files in name order within a class. Each image is
opened with PIL and converted to RGB, or to L when the first image is L (a folder of
grayscale PNGs stays one channel). Its shorter side is resized to S (bilinear, which PIL
antialiases when it reduces; the longer side as torchvision's Resize computes it), then
its centre C x C cropped (torchvision's CenterCrop offsets). The record keeps the raw
pixels (row-major, channels interleaved), or the pixels encoded again as a JPEG at
quality Q. The per-channel sum and sum of squares of those pixels (before any JPEG
encoding) give the mean and standard deviation the JSON line reports.

All records go, in order, to OUT/records.bin: for each, a u32 label, a u32 byte length
and the bytes, the integers little-endian. N processes share the work through
multiprocessing.Pool.imap over chunks of images; N = 1 does it in this process, without
a pool. The line printed is

  {"records", "seconds", "records_per_s", "bytes", "threads", "peak_rss_kb", ...}

where seconds runs from listing DIR to closing the file, bytes is the file's size and
peak_rss_kb adds this process's peak resident memory to that of its largest worker."""
import argparse
import io
import json
import multiprocessing
import os
import resource
import struct
import sys
import time

import numpy as np
from PIL import Image

EXTENSIONS = (".jpg", ".jpeg", ".png")
CHUNK = 32  # images a pool task
OPTIONS = {}  # the work's settings; set before the pool starts, so its workers share them


def listing(root):
    """(path, label) of every image, classes and files in name order."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c))) if f.lower().endswith(EXTENSIONS)]


def shard_image(path):
    """The record of one image, and its pixels as a numpy array."""
    o = OPTIONS
    with Image.open(path) as im:
        im = im.convert(o["mode"])
    if o["resize"]:
        w, h = im.size
        s = o["resize"]
        size = (s, int(s * h / w)) if w <= h else (int(s * w / h), s)
        if size != im.size:
            im = im.resize(size, Image.BILINEAR, reducing_gap=None)
    if o["crop"]:
        w, h = im.size
        c = o["crop"]
        left, top = int(round((w - c) / 2.0)), int(round((h - c) / 2.0))
        im = im.crop((left, top, left + c, top + c))
    pixels = np.asarray(im)
    if o["store"] == "raw":
        return pixels.tobytes(), pixels
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=o["quality"])
    return buf.getvalue(), pixels


def shard_chunk(items):
    """Records of (path, label) items, their bytes joined, the pixels' per-channel sum
    and sum of squares, and the number of pixels a channel."""
    channels = 1 if OPTIONS["mode"] == "L" else 3
    total, squares = np.zeros(channels, np.int64), np.zeros(channels, np.int64)
    out, count = [], 0
    for path, label in items:
        data, pixels = shard_image(path)
        p = pixels.reshape(-1, channels).astype(np.int64)
        total += p.sum(0)
        squares += (p * p).sum(0)
        count += len(p)
        out.append(struct.pack("<II", label, len(data)))
        out.append(data)
    return b"".join(out), total, squares, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="an image folder: DIR/<class>/*.{jpg,jpeg,png}")
    ap.add_argument("--out", required=True, help="directory for records.bin")
    ap.add_argument("--resize", type=int, default=0, metavar="S", help="shorter side to S pixels (default: as it is)")
    ap.add_argument("--center-crop", type=int, default=0, metavar="C", help="the centre C x C (default: all)")
    ap.add_argument("--store", choices=["raw", "jpeg"], default="raw")
    ap.add_argument("--quality", type=int, default=90, help="JPEG quality with --store jpeg")
    ap.add_argument("--threads", type=int, default=1, help="processes")
    a = ap.parse_args()
    if a.threads < 1 or a.resize < 0 or a.center_crop < 0:
        sys.exit("pil_shard: --threads must be at least 1, --resize and --center-crop not negative")

    start = time.perf_counter()
    items = listing(a.dir)
    if not items:
        sys.exit(f"pil_shard: no images in {a.dir}/<class>/")
    with Image.open(items[0][0]) as first:
        mode = "L" if first.mode == "L" else "RGB"
    OPTIONS.update(mode=mode, resize=a.resize, crop=a.center_crop, store=a.store, quality=a.quality)
    channels = 1 if mode == "L" else 3
    total, squares, count = np.zeros(channels, np.int64), np.zeros(channels, np.int64), 0
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "records.bin")
    chunks = [items[i:i + CHUNK] for i in range(0, len(items), CHUNK)]
    pool = multiprocessing.Pool(a.threads) if a.threads > 1 else None
    with open(path, "wb") as f:
        for data, t, s, c in (pool.imap(shard_chunk, chunks) if pool else map(shard_chunk, chunks)):
            f.write(data)
            total += t
            squares += s
            count += c
    if pool:
        pool.close()
        pool.join()  # before getrusage: RUSAGE_CHILDREN counts the workers waited for
    seconds = time.perf_counter() - start

    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss +
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    mean = total / count
    std = np.sqrt(np.maximum(squares / count - mean * mean, 0))
    n = len(items)
    print(json.dumps({"records": n, "seconds": round(seconds, 4), "records_per_s": round(n / seconds, 1),
                      "bytes": os.path.getsize(path), "threads": a.threads, "peak_rss_kb": peak,
                      "mode": mode, "store": a.store, "resize": a.resize, "center_crop": a.center_crop,
                      "mean": [round(float(x), 4) for x in mean], "std": [round(float(x), 4) for x in std]}))


if __name__ == "__main__":
    main()
