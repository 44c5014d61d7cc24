#!/usr/bin/python3
"""The viewer's frame rate: writes a random model of --splats splats (3DGS .ply, SH degree --sh),
serves it with `splat view`, opens the page in headless Chromium (WebGL through SwiftShader, the
software renderer, unless --gpu) at --size with bench=1 (the orbit turns every frame, so every
frame is drawn and the sort worker re-sorts continuously) and counts frames and sorts over
--seconds. Prints one JSON object.
    tools/bench/bench_view.py --splat build/splat [--splats 1000000] [--sh 0] [--page-sh D] [--size 1280x720]
                          [--seconds 20]
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tests', 'browser'))
from random_model import write_random_ply  # noqa: E402
from view_page import Page, start_view  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--splat', required=True)
    ap.add_argument('--splats', type=int, default=1000000)
    ap.add_argument('--sh', type=int, default=0, choices=range(4), help="the model's SH degree")
    ap.add_argument('--page-sh', type=int, choices=range(4), help="the page's sh= option (default: none)")
    ap.add_argument('--size', default='1280x720')
    ap.add_argument('--seconds', type=float, default=20)
    args = ap.parse_args()
    width, height = map(int, args.size.split('x'))
    tmp = tempfile.mkdtemp(prefix='bench_view_')
    model = os.path.join(tmp, 'random.ply')
    write_random_ply(model, args.splats, sh_degree=args.sh)
    server, base = start_view(args.splat, model)
    page = None
    try:
        start = time.time()
        query = '?bench=1&hud=0' + ('' if args.page_sh is None else f'&sh={args.page_sh}')
        page = Page(base + query, width, height)
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
            'splats': args.splats, 'model_sh': args.sh, 'page_sh': page.js('splatView.shDegree'), 'size': args.size,
            'renderer': renderer, 'load_seconds': round(loaded, 2),
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
