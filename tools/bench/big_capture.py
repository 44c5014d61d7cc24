#!/usr/bin/env python3
"""Writes a large generated capture for host-memory measurements (issue 21): N frames of W x H in
an instant-ngp transforms.json, cameras on a circle looking at the origin. The frames are
hard links of one PNG (a smooth colour pattern), so the capture costs one file on disk while the
loader decodes and keeps every frame. Usage:

    tools/bench/big_capture.py DIR [--frames 1000] [--width 1920] [--height 1080]
    /usr/bin/time -v splat train DIR --set train.iterations=1 --set backend.type=cpu \\
        --set model.init_points=1000 --set densify.cap_max=2000 \\
        --set data.max_image_width=0   # full size (else 1600 wide); "Maximum resident set size"
"""
import argparse
import json
import math
import os
import struct
import zlib


def png_bytes(width, height):
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            rows += bytes((x * 255 // max(1, width - 1), y * 255 // max(1, height - 1),
                           (x + y) % 256))
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b""))


def look_at_origin(angle, radius):
    """Camera-to-world, OpenGL axes (the camera looks down -z), on a circle in the xy plane."""
    eye = (radius * math.cos(angle), radius * math.sin(angle), 0.5)
    back = [e / math.sqrt(sum(v * v for v in eye)) for e in eye]  # +z: away from the origin
    up = (0.0, 0.0, 1.0)
    right = (up[1] * back[2] - up[2] * back[1], up[2] * back[0] - up[0] * back[2],
             up[0] * back[1] - up[1] * back[0])
    n = math.sqrt(sum(v * v for v in right))
    right = [v / n for v in right]
    cam_up = (back[1] * right[2] - back[2] * right[1], back[2] * right[0] - back[0] * right[2],
              back[0] * right[1] - back[1] * right[0])
    return [[right[r], cam_up[r], back[r], eye[r]] for r in range(3)] + [[0, 0, 0, 1]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    a = ap.parse_args()
    os.makedirs(os.path.join(a.dir, "images"), exist_ok=True)
    first = os.path.join(a.dir, "images", "f00000.png")
    with open(first, "wb") as f:
        f.write(png_bytes(a.width, a.height))
    frames = []
    for i in range(a.frames):
        name = "images/f%05d.png" % i
        path = os.path.join(a.dir, name)
        if i > 0 and not os.path.exists(path):
            os.link(first, path)
        frames.append({"file_path": name,
                       "transform_matrix": look_at_origin(2 * math.pi * i / a.frames, 4.0)})
    f = 0.8 * a.width
    with open(os.path.join(a.dir, "transforms.json"), "w") as out:
        json.dump({"fl_x": f, "fl_y": f, "cx": a.width / 2, "cy": a.height / 2, "w": a.width,
                   "h": a.height, "frames": frames}, out)


if __name__ == "__main__":
    main()
