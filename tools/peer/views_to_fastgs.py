#!/usr/bin/env python3
"""Writes a `splat bench views` export (splat-views-1) in a layout FastGS (and the INRIA 3DGS
code) reads, keeping splat's exact train/test split:
  python3 views_to_fastgs.py VIEWS_DIR OUT_DIR

Blender layout, for views that share one size and focal length with fx = fy and have no points
(NeRF-synthetic): OUT_DIR/transforms_{train,test}.json (camera_angle_x, frames with file_path and
an OpenGL camera-to-world transform_matrix) and OUT_DIR/{train,test}/NAME.png; FastGS then draws
its own random init (100k points in [-1.3, 1.3]^3, the Lego protocol's cube).

COLMAP layout, for every other export (real captures: sizes and focal lengths per view, fx != fy):
OUT_DIR/sparse/0/{cameras,images}.txt (one PINHOLE camera per view, world-to-camera poses as
COLMAP writes them), OUT_DIR/images/NNNN.png and OUT_DIR/sparse/0/points3D.ply. FastGS's COLMAP
reader sorts the images by name and holds out every 8th with --eval, so the names put splat's
held-out views at positions 0, 8, 16, ...; an export whose split cannot be written that way is
refused. The points are the export's sparse points, or, for a capture without them, splat's own
random initial splats (the export's init_points): FastGS's reader needs points, and its own
random cube is for NeRF-synthetic scenes.

Images are 8-bit RGB, the export's bytes. The INRIA rasterizer ignores cx, cy (it renders with a
centred principal point): the largest offset is printed and written to OUT_DIR/peer_layout.json
with the layout, the points' source and the background FastGS must render on (-w when white)."""

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


def write_points_ply(path, p):
    """x y z nx ny nz red green blue, as FastGS's storePly; p is [N, 6] (x y z r g b in [0, 1])."""
    rows = np.zeros(len(p), dtype=[(c, "<f4") for c in ("x", "y", "z", "nx", "ny", "nz")] +
                    [(c, "u1") for c in ("red", "green", "blue")])
    for i, c in enumerate("xyz"):
        rows[c] = p[:, i]
    for i, c in enumerate(("red", "green", "blue")):
        rows[c] = np.clip(np.round(p[:, 3 + i] * 255), 0, 255)
    with open(path, "wb") as f:
        f.write(("ply\nformat binary_little_endian 1.0\nelement vertex %d\n" % len(p)).encode())
        for c in ("x", "y", "z", "nx", "ny", "nz"):
            f.write(f"property float {c}\n".encode())
        for c in ("red", "green", "blue"):
            f.write(f"property uchar {c}\n".encode())
        f.write(b"end_header\n" + rows.tobytes())


def load_image(src, v):
    return np.ascontiguousarray(np.load(os.path.join(src, v["image"]), allow_pickle=False))


def one_field_of_view(views):
    v0 = views[0]
    return all((v["width"], v["height"]) == (v0["width"], v0["height"]) and
               abs(v["fx"] - v0["fx"]) <= 1e-6 * v0["fx"] and abs(v["fy"] - v["fx"]) <= 1e-6 * v["fx"]
               for v in views)


def write_blender(src, meta, out):
    v0 = meta["train"][0]
    for split in ("train", "test"):
        os.makedirs(os.path.join(out, split), exist_ok=True)
        frames = []
        for k, v in enumerate(meta[split]):
            stem = f"{split}/{split}_{k:04d}"
            write_png(os.path.join(out, stem + ".png"), load_image(src, v))
            c2w = np.linalg.inv(np.asarray(v["world_to_camera"], dtype=np.float64))
            c2w[:3, 1:3] *= -1  # OpenCV camera axes -> OpenGL (y up, z back)
            frames.append({"file_path": stem, "transform_matrix": c2w.tolist()})
        with open(os.path.join(out, f"transforms_{split}.json"), "w") as f:
            json.dump({"camera_angle_x": 2 * math.atan(v0["width"] / (2 * v0["fx"])),
                       "frames": frames}, f, indent=1)


def colmap_order(n_train, n_test):
    """The views in name order such that every 8th (0, 8, ...) is a held-out one: [(split, k)]."""
    n = n_train + n_test
    if n_test != (n + 7) // 8:
        return None
    train, test = iter(range(n_train)), iter(range(n_test))
    return [("test", next(test)) if i % 8 == 0 else ("train", next(train)) for i in range(n)]


def quaternion(R):
    """COLMAP's qvec (w, x, y, z) of a rotation matrix (its rotmat2qvec)."""
    (xx, yx, zx), (xy, yy, zy), (xz, yz, zz) = R
    K = np.array([[xx - yy - zz, 0, 0, 0], [yx + xy, yy - xx - zz, 0, 0],
                  [zx + xz, zy + yz, zz - xx - yy, 0], [yz - zy, zx - xz, xy - yx, xx + yy + zz]]) / 3
    w, V = np.linalg.eigh(K)
    q = V[[3, 0, 1, 2], np.argmax(w)]
    return -q if q[0] < 0 else q


def write_colmap(src, meta, out, order):
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    os.makedirs(os.path.join(out, "sparse", "0"), exist_ok=True)
    cams, imgs = [], []
    for i, (split, k) in enumerate(order, start=1):
        v = meta[split][k]
        name = f"{i - 1:04d}.png"
        write_png(os.path.join(out, "images", name), load_image(src, v))
        w2c = np.asarray(v["world_to_camera"], dtype=np.float64)
        q, t = quaternion(w2c[:3, :3]), w2c[:3, 3]
        cams.append(f"{i} PINHOLE {v['width']} {v['height']} {v['fx']!r} {v['fy']!r} {v['cx']!r} {v['cy']!r}")
        imgs.append(" ".join([str(i)] + [repr(float(x)) for x in (*q, *t)] + [str(i), name]) + "\n")
    with open(os.path.join(out, "sparse", "0", "cameras.txt"), "w") as f:
        f.write("# CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n" + "\n".join(cams) + "\n")
    with open(os.path.join(out, "sparse", "0", "images.txt"), "w") as f:
        f.write("# IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, NAME; then its 2D points\n" +
                "\n".join(imgs) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1:]
    with open(os.path.join(src, "views.json")) as f:
        meta = json.load(f)
    if meta.get("format") != "splat-views-1":
        sys.exit(f"{src}/views.json: format {meta.get('format')!r}, expected splat-views-1")
    views = meta["train"] + meta["test"]
    offset = max(max(abs(v["cx"] - v["width"] / 2), abs(v["cy"] - v["height"] / 2)) for v in views)
    points, source = None, None
    for key, what in (("points", "the export's sparse points"),
                      ("init_points", "splat's random initial splats (the capture has no points)")):
        if meta.get(key):
            points, source = np.load(os.path.join(src, meta[key]), allow_pickle=False), what
            break
    if one_field_of_view(views) and not meta.get("points"):
        layout, points, source = "blender", None, "FastGS's own random init: 100k points in [-1.3, 1.3]^3"
        write_blender(src, meta, out)
    else:
        layout = "colmap"
        order = colmap_order(len(meta["train"]), len(meta["test"]))
        if order is None:
            sys.exit(f"{src}/views.json: {len(meta['train'])} training and {len(meta['test'])} held-out "
                     "views: FastGS's COLMAP reader holds out every 8th image, which cannot give this split")
        if points is None:
            sys.exit(f"{src}/views.json: no points and no init_points: FastGS's COLMAP reader needs points")
        write_colmap(src, meta, out, order)
        write_points_ply(os.path.join(out, "sparse", "0", "points3D.ply"), points)
    bg = [float(c) for c in meta.get("background", [0, 0, 0])]
    if bg not in ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]):
        print(f"warning: the export's background {bg} is neither white nor black; FastGS renders "
              "on black", file=sys.stderr)
    n = 0 if points is None else len(points)
    info = {"layout": layout, "white_background": bg == [1.0, 1.0, 1.0], "background": bg,
            "train_views": len(meta["train"]), "test_views": len(meta["test"]),
            "points": n, "init": source, "max_principal_point_offset_px": offset}
    with open(os.path.join(out, "peer_layout.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(f"{layout} layout: {len(meta['train'])} train, {len(meta['test'])} test views, init {source} "
          f"({n} points) -> {out}; principal point off centre by up to {offset:.2f} px (FastGS "
          "renders it centred)")


if __name__ == "__main__":
    main()
