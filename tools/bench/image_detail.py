#!/usr/bin/python3
"""How much detail a capture's training images carry: per dataset, the share of pixels whose
luminance gradient is strong, and that share times the pixels, summed over the training views
("edge megapixels"). The lead it measures: the splat count a capture needs follows its detail, not
its pixel count (Lego's 64 MP want about 1M splats, fox's 118 MP about 590k; the performance log,
2026-12-07).

    tools/bench/image_detail.py DATASET [DATASET ...] [--downscale N] [--threshold T] [--every K]

DATASET is a directory with transforms_train.json or transforms.json (NeRF-synthetic or instant-ngp
layout; RGBA is composited on white, as NeRF-synthetic is trained) or a COLMAP folder (its
images/); every view the file names counts, the views splat holds out of a single-file capture
(every 8th) among them. --downscale N box-filters each image by N first (as `data.downscale`); --every K reads
every Kth view (default: about a dozen views) and scales its means to all of them. The gradient is
the central magnitude of forward differences of luminance in [0, 1]; strong means above T (0.05).
Needs numpy and Pillow (Debian: python3-numpy python3-pil).
"""
import argparse
import glob
import json
import os

import numpy as np
from PIL import Image


def luminance(path, downscale):
    im = Image.open(path)
    rgba = np.asarray(im.convert("RGBA"), dtype=np.float32) / 255
    y = (rgba[..., :3] * rgba[..., 3:] + (1 - rgba[..., 3:])).mean(axis=2)
    h, w = (s // downscale * downscale for s in y.shape)
    return y[:h, :w].reshape(h // downscale, downscale, w // downscale, downscale).mean(axis=(1, 3))


def strong_share(y, threshold):
    gx = np.diff(y, axis=1)[:-1]
    gy = np.diff(y, axis=0)[:, :-1]
    return float((np.hypot(gx, gy) > threshold).mean())


def training_images(root):
    for name in ("transforms_train.json", "transforms.json"):
        path = os.path.join(root, name)
        if os.path.exists(path):
            paths = []
            for frame in json.load(open(path))["frames"]:
                p = os.path.join(root, frame["file_path"])
                paths.append(p if os.path.exists(p) else glob.glob(glob.escape(p) + ".*")[0])
            return paths
    images = os.path.join(root, "images")
    if os.path.isdir(images):
        return sorted(os.path.join(images, f) for f in os.listdir(images)
                      if f.lower().endswith((".jpg", ".jpeg", ".png", ".webp")))
    raise SystemExit(f"{root}: no transforms_train.json, transforms.json or images/ folder")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--downscale", type=int, default=1)
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--every", type=int, default=0)
    args = ap.parse_args()
    print("| dataset | views | MP a view | strong-gradient share | edge MP a view | edge MP |")
    print("|---|---|---|---|---|---|")
    for root in args.datasets:
        paths = training_images(root)
        sample = paths[:: args.every or max(1, len(paths) // 12)]
        ys = [luminance(p, args.downscale) for p in sample]
        mp = np.mean([y.size for y in ys]) / 1e6
        share = np.mean([strong_share(y, args.threshold) for y in ys])
        print(f"| {os.path.basename(os.path.normpath(root))} | {len(paths)} | {mp:.2f} | {share:.4f} "
              f"| {share * mp:.4f} | {share * mp * len(paths):.2f} |")


if __name__ == "__main__":
    main()
