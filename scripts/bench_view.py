#!/usr/bin/python3
"""The viewer's frame rate: writes a random model of --splats splats (3DGS .ply, SH degree 0),
serves it with `splat view`, opens the page in headless Chromium (WebGL through SwiftShader, the
software renderer, unless --gpu) at --size with bench=1 (the orbit turns every frame, so every
frame is drawn and the sort worker re-sorts continuously) and counts frames and sorts over
--seconds. Prints one JSON object.
    scripts/bench_view.py --splat build/splat [--splats 1000000] [--size 1280x720] [--seconds 20]
"""
import argparse
import array
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'browser'))
from view_page import Page  # noqa: E402


def write_random_ply(path, n, seed=1):
    """n splats in a unit ball, 0.5-3 cm scales, random rotations and colours, SH degree 0."""
    names = ['x', 'y', 'z', 'nx', 'ny', 'nz', 'f_dc_0', 'f_dc_1', 'f_dc_2', 'opacity', 'scale_0', 'scale_1',
             'scale_2', 'rot_0', 'rot_1', 'rot_2', 'rot_3']
    rng = random.Random(seed)
    values = array.array('f')
    for _ in range(n):
        while True:
            p = [rng.uniform(-1, 1) for _ in range(3)]
            if p[0] ** 2 + p[1] ** 2 + p[2] ** 2 <= 1:
                break
        q = [rng.gauss(0, 1) for _ in range(4)]
        values.extend(p + [0, 0, 0] + [rng.uniform(-1.5, 1.5) for _ in range(3)] + [rng.gauss(0, 1.5)] +
                      [math.log(rng.uniform(0.005, 0.03)) for _ in range(3)] + q)
    with open(path, 'wb') as f:
        header = ['ply', 'format binary_little_endian 1.0', f'element vertex {n}']
        header += [f'property float {name}' for name in names] + ['end_header']
        f.write(('\n'.join(header) + '\n').encode())
        values.tofile(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--splat', required=True)
    ap.add_argument('--splats', type=int, default=1000000)
    ap.add_argument('--size', default='1280x720')
    ap.add_argument('--seconds', type=float, default=20)
    args = ap.parse_args()
    width, height = map(int, args.size.split('x'))
    tmp = tempfile.mkdtemp(prefix='bench_view_')
    model = os.path.join(tmp, 'random.ply')
    write_random_ply(model, args.splats)
    server = subprocess.Popen([args.splat, 'view', model, '--port', '0'], stdout=subprocess.PIPE, text=True)
    page = None
    try:
        base = re.search(r'(http://\S+)', server.stdout.readline()).group(1)
        start = time.time()
        page = Page(base + '?bench=1&hud=0', width, height)
        # A software renderer can take minutes a frame: page calls wait for the frame in progress.
        page.driver.set_script_timeout(900)
        renderer = page.js("(() => { const gl = document.createElement('canvas').getContext('webgl2');"
                           " const e = gl.getExtension('WEBGL_debug_renderer_info');"
                           " return e ? gl.getParameter(e.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER); })()")
        while not page.js('window.splatView && splatView.sorts > 0 && splatView.frames > 0'):
            time.sleep(0.2)
        loaded = time.time() - start
        count = 'return [splatView.frames, splatView.sorts, splatView.sortMs]'
        (f0, s0, _), t0 = page.driver.execute_script(count), time.time()
        time.sleep(args.seconds)
        (f1, s1, sort_ms), t1 = page.driver.execute_script(count), time.time()
        result = {
            'splats': args.splats, 'size': args.size, 'renderer': renderer, 'load_seconds': round(loaded, 2),
            'seconds': round(t1 - t0, 1), 'frames': f1 - f0, 'fps': round((f1 - f0) / (t1 - t0), 3),
            'sorts_per_second': round((s1 - s0) / (t1 - t0), 2), 'last_sort_ms': round(sort_ms, 1),
            'drawing_buffer': page.js('[document.getElementById("view").width, document.getElementById("view").height]'),
        }
        print(json.dumps(result))
    finally:
        if page:
            page.close()
        server.terminate()
        server.wait(10)


if __name__ == '__main__':
    main()
