#!/usr/bin/env python3
"""Writes a tiny fake `splat bench views` export (format splat-views-1) for checking
gsplat_mcmc.py without a GPU: random images, a ring of cameras looking at a point, and optional
random points.   python3 fake_views.py DIR [--train 6] [--test 2] [--points 500] [--no-points]"""

import argparse
import json
import os

import numpy as np


def look_at(eye, target):
    """OpenCV world_to_camera (x right, y down, z forward) for a camera at eye facing target."""
    z = target - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, np.array([0.0, 0.0, -1.0]))  # world up is +z; image y points down
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    R = np.stack([x, y, z])  # rows: camera axes in world coordinates
    w2c = np.eye(4)
    w2c[:3, :3] = R
    w2c[:3, 3] = -R @ eye
    return w2c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=6)
    ap.add_argument("--test", type=int, default=2)
    ap.add_argument("--points", type=int, default=500)
    ap.add_argument("--no-points", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    os.makedirs(a.out, exist_ok=True)
    centre = np.array([10.0, -5.0, 2.0])  # away from the origin, to exercise the normalisation
    views = {"train": [], "test": []}
    n = a.train + a.test
    for k in range(n):
        split = "test" if k % 4 == 3 and len(views["test"]) < a.test else "train"
        if split == "train" and len(views["train"]) >= a.train:
            split = "test"
        ang = 2 * np.pi * k / n
        eye = centre + np.array([4 * np.cos(ang), 4 * np.sin(ang), 1.0])
        w, h = (32, 24) if k % 2 else (40, 30)  # sizes differ per view
        name = f"{split}_{len(views[split]):04d}"
        np.save(os.path.join(a.out, name + ".npy"),
                rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        views[split].append({"name": f"img{k:03d}.png", "image": name + ".npy", "width": w,
                             "height": h, "fx": 0.9 * w, "fy": 0.9 * w, "cx": w / 2, "cy": h / 2,
                             "world_to_camera": look_at(eye, centre).tolist()})
    points = None
    if not a.no_points:
        p = np.concatenate([centre + rng.normal(size=(a.points, 3)),
                            rng.random((a.points, 3))], axis=1).astype(np.float32)
        p[1] = p[0]  # a duplicate point: knn distance 0
        np.save(os.path.join(a.out, "points.npy"), p)
        points = "points.npy"
    c = np.stack([np.linalg.inv(np.array(v["world_to_camera"]))[:3, 3] for v in views["train"]])
    meta = {"format": "splat-views-1", "dataset": "fake", "background": [1.0, 1.0, 1.0],
            "train": views["train"], "test": views["test"], "points": points,
            "scene_extent": 1.1 * float(np.max(np.linalg.norm(c - c.mean(0), axis=1)))}
    with open(os.path.join(a.out, "views.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
