#!/usr/bin/env python3
"""Writes a `splat bench views` export (splat-views-1) in the NeRF-synthetic (Blender) layout that
FastGS (and the INRIA 3DGS code) reads, keeping splat's exact train/test split:
  python3 views_to_blender.py VIEWS_DIR OUT_DIR
OUT_DIR/transforms_{train,test}.json (camera_angle_x, frames with file_path and an OpenGL
camera-to-world transform_matrix), OUT_DIR/{train,test}/NAME.png (8-bit RGB, the export's bytes),
and OUT_DIR/points3d.ply (x y z nx ny nz red green blue, as FastGS's storePly) from the export's
sparse points when it has them; without them FastGS draws its own random init (100k points in
[-1.3, 1.3]^3, the Lego protocol's cube). The layout has one field of view for every view and
assumes fx = fy and a centred principal point (the INRIA rasterizer ignores cx, cy): views that
differ in size or focal length are refused; the largest principal-point offset is printed and
written to OUT_DIR/peer_layout.json with the background FastGS must render on (-w when white)."""

import json
import math
import os
import struct
import sys
import zlib

import numpy as np


def write_png(path, img):
    """8-bit RGB PNG, no filtering (zlib only: no imaging library needed here)."""
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1:]
    with open(os.path.join(src, "views.json")) as f:
        meta = json.load(f)
    if meta.get("format") != "splat-views-1":
        sys.exit(f"{src}/views.json: format {meta.get('format')!r}, expected splat-views-1")
    views = meta["train"] + meta["test"]
    v0 = views[0]
    for v in views:
        if (v["width"], v["height"]) != (v0["width"], v0["height"]) or \
                abs(v["fx"] - v0["fx"]) > 1e-6 * v0["fx"] or abs(v["fy"] - v["fx"]) > 1e-3 * v["fx"]:
            sys.exit(f"{src}/views.json: {v['name']}: {v['width']}x{v['height']}, fx {v['fx']}, "
                     f"fy {v['fy']} differs from {v0['name']} ({v0['width']}x{v0['height']}, fx "
                     f"{v0['fx']}) or fx != fy: the Blender layout holds one field of view")
    offset = max(max(abs(v["cx"] - v["width"] / 2), abs(v["cy"] - v["height"] / 2)) for v in views)
    for split in ("train", "test"):
        os.makedirs(os.path.join(out, split), exist_ok=True)
        frames = []
        for k, v in enumerate(meta[split]):
            img = np.load(os.path.join(src, v["image"]), allow_pickle=False)
            stem = f"{split}/{split}_{k:04d}"
            write_png(os.path.join(out, stem + ".png"), np.ascontiguousarray(img))
            c2w = np.linalg.inv(np.asarray(v["world_to_camera"], dtype=np.float64))
            c2w[:3, 1:3] *= -1  # OpenCV camera axes -> OpenGL (y up, z back)
            frames.append({"file_path": stem, "transform_matrix": c2w.tolist()})
        with open(os.path.join(out, f"transforms_{split}.json"), "w") as f:
            json.dump({"camera_angle_x": 2 * math.atan(v0["width"] / (2 * v0["fx"])),
                       "frames": frames}, f, indent=1)
    ply = os.path.join(out, "points3d.ply")
    if os.path.exists(ply):
        os.remove(ply)
    n = 0
    if meta.get("points"):
        p = np.load(os.path.join(src, meta["points"]), allow_pickle=False)
        n = len(p)
        rows = np.zeros(n, dtype=[(c, "<f4") for c in ("x", "y", "z", "nx", "ny", "nz")] +
                        [(c, "u1") for c in ("red", "green", "blue")])
        for i, c in enumerate("xyz"):
            rows[c] = p[:, i]
        for i, c in enumerate(("red", "green", "blue")):
            rows[c] = np.clip(np.round(p[:, 3 + i] * 255), 0, 255)
        with open(ply, "wb") as f:
            f.write(("ply\nformat binary_little_endian 1.0\nelement vertex %d\n" % n).encode())
            for c in ("x", "y", "z", "nx", "ny", "nz"):
                f.write(f"property float {c}\n".encode())
            for c in ("red", "green", "blue"):
                f.write(f"property uchar {c}\n".encode())
            f.write(b"end_header\n" + rows.tobytes())
    bg = [float(c) for c in meta.get("background", [0, 0, 0])]
    if bg not in ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]):
        print(f"warning: the export's background {bg} is neither white nor black; FastGS renders "
              "on black", file=sys.stderr)
    layout = {"white_background": bg == [1.0, 1.0, 1.0], "background": bg,
              "train_views": len(meta["train"]), "test_views": len(meta["test"]),
              "points": n, "max_principal_point_offset_px": offset}
    with open(os.path.join(out, "peer_layout.json"), "w") as f:
        json.dump(layout, f, indent=1)
    print(f"{len(meta['train'])} train, {len(meta['test'])} test views, {n} points -> {out}; "
          f"principal point off centre by up to {offset:.2f} px (FastGS renders it centred)")


if __name__ == "__main__":
    main()
