#!/usr/bin/python3
"""`splat view MODEL` without a dataset in headless Chromium: the first view shows the model from
outside its bounds, on a canvas of the window's shape.

The model: an object (a ball of red splats, off the origin) and a few far splats (blue, 3% of them,
20 to 40 times the object's radius away in every direction, as the background and floaters of a real
capture). The page must
1. draw on a canvas of the window's shape, also after the window turns from landscape to portrait;
2. on its first frame, show the object large and centred: red pixels cover at least --min-cover of
   the canvas and their centroid lies within a tenth of the canvas of its centre. (Before, the camera
   stood three RMS radii of all splats away from their mean: the object covered under 1%.)
Prints one JSON object with the measured figures; exits non-zero when a check fails.
"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from random_model import random_splats, write_ply  # noqa: E402
from view_page import Page, report, viewing  # noqa: E402

RED, BLUE = [(1.5, 1.7), (-1.7, -1.5), (-1.7, -1.5)], [(-1.7, -1.5), (-1.7, -1.5), (1.5, 1.7)]
CENTRE = (3, -1, 2)


def red_pixels(width, height, rgb):
    """The share of the canvas that is red (the object), and the centroid of those pixels."""
    count, sx, sy = 0, 0.0, 0.0
    for i in range(width * height):
        r, g, b = rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]
        if r - max(g, b) > 80:
            count += 1
            sx += i % width
            sy += i // width
    return count / (width * height), (sx / max(count, 1), sy / max(count, 1))


def canvas_shape(page, timeout=30):
    """The drawing buffer's size once it has the window's (CSS pixels at a device scale of 1), else
    the last one seen."""
    end = time.time() + timeout
    while True:
        inner = page.js('[innerWidth, innerHeight]')
        canvas = page.js('[document.getElementById("view").width, document.getElementById("view").height]')
        if canvas == inner or time.time() > end:
            return inner, canvas
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--splat', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--min-cover', type=float, default=0.05)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    model = os.path.join(args.out, 'object.ply')
    rng = random.Random(3)
    write_ply(model, random_splats(rng, 3000, scales=(0.02, 0.06), dc=RED, centre=CENTRE) +
              random_splats(rng, 100, scales=(0.2, 0.5), dc=BLUE, centre=CENTRE, radii=(20, 40)))

    failures, result = [], {}
    with viewing(args.splat, model) as base, Page(base + '?hud=0', 640, 480) as page:
        page.settled()
        inner, canvas = canvas_shape(page)
        result['window'], result['canvas'] = inner, canvas
        if canvas != inner:
            failures.append(f'the canvas is {canvas[0]}x{canvas[1]} in a {inner[0]}x{inner[1]} window')
        width, height, rgb = page.pixels()
        cover, (cx, cy) = red_pixels(width, height, rgb)
        result['cover'] = round(cover, 4)
        result['centroid'] = [round(cx / width, 3), round(cy / height, 3)]
        if cover < args.min_cover:
            failures.append(f'the object covers {cover:.2%} of the first frame, below {args.min_cover:.0%}')
        elif abs(cx / width - 0.5) > 0.1 or abs(cy / height - 0.5) > 0.1:
            failures.append(f'the object is drawn off centre: its centroid at {result["centroid"]} of the canvas')

        page.driver.set_window_size(400, 700)
        inner, canvas = canvas_shape(page)
        result['portrait_window'], result['portrait_canvas'] = inner, canvas
        if canvas != inner:
            failures.append(f'after a resize the canvas is {canvas[0]}x{canvas[1]} in a {inner[0]}x{inner[1]} window')
    return report(result, failures)


if __name__ == '__main__':
    sys.exit(main())
