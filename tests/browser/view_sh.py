#!/usr/bin/python3
"""View-dependent colour in `splat view`'s page. A random model of SH degree 3 whose higher bands are
strong (the colour of a splat changes with the direction it is seen from) is rendered by the CPU
backend at the dataset's test cameras (`splat render`); the page at those cameras must draw the same
pictures (PSNR above --min-psnr), and the same page with ?sh=0 (the degree-0 colour only) must not
(PSNR below --max-psnr-sh0), so a page that ignored the higher bands fails.
Prints one JSON object with the measured figures; exits non-zero when a check fails.
"""
import argparse
import json
import os
import subprocess
import sys
import urllib.request

from random_model import write_random_ply
from view_page import Page, psnr, read_png_rgb, start_view


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--splat', required=True)
    ap.add_argument('--data', required=True, help='a dataset whose cameras look at the unit ball')
    ap.add_argument('--out', required=True)
    ap.add_argument('--splats', type=int, default=2000)
    ap.add_argument('--min-psnr', type=float, default=40.0)
    ap.add_argument('--max-psnr-sh0', type=float, default=30.0)
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    model, renders = os.path.join(args.out, 'sh3.ply'), os.path.join(args.out, 'cpu')
    # Base colours up to 0.5 + 0.28 * 3 = 1.34, which the higher bands raise or clamp at 0: sums
    # above 1 where splats overlap, which the page must blend unclamped as the CPU backend does
    # (an 8-bit drawing buffer clamping at every blend measured 44 dB against the CPU render).
    write_random_ply(model, args.splats, sh_degree=3, scales=(0.02, 0.08), dc=(-1.5, 3), sh_sigma=0.3)
    subprocess.run([args.splat, 'render', model, args.data, '--out', renders], check=True,
                   stdout=subprocess.DEVNULL)
    server, base = start_view(args.splat, model, args.data)
    page = None
    failures, result = [], {}
    try:
        scene = json.load(urllib.request.urlopen(base + 'scene'))
        tests = [c for c in scene['cameras'] if c['split'] == 'test']

        def draw(test_index, query):
            """The page at a test camera: its pixels and the CPU render's."""
            c = tests[test_index]
            url = f'{base}?camera=test:{test_index}&size=camera&frusta=0&hud=0{query}'
            nonlocal page
            if page is None:
                page = Page(url, c['width'] + 100, c['height'] + 200)
            else:
                page.driver.get(url)
            page.settled()
            w, h, got = page.pixels()
            rw, rh, want = read_png_rgb(os.path.join(renders, c['name'] + '.png'))
            if (w, h) != (rw, rh):
                raise RuntimeError(f'page drew {w}x{h}, the CPU render is {rw}x{rh}')
            return page.js('splatView.shDegree'), psnr(got, want)

        for i in range(min(2, len(tests))):
            degree, result[f'psnr_test{i}'] = draw(i, '')
            if degree != 3:
                failures.append(f'test {i}: the page drew SH degree {degree}, not the model\'s 3')
            if result[f'psnr_test{i}'] < args.min_psnr:
                failures.append(f'test {i}: PSNR {result[f"psnr_test{i}"]:.2f} dB against the CPU render, '
                                f'below {args.min_psnr}')
        degree, result['psnr_test0_sh0'] = draw(0, '&sh=0')
        if degree != 0:
            failures.append(f'?sh=0: the page drew SH degree {degree}')
        if result['psnr_test0_sh0'] > args.max_psnr_sh0:
            failures.append(f'?sh=0: PSNR {result["psnr_test0_sh0"]:.2f} dB against the CPU render at degree 3, '
                            f'above {args.max_psnr_sh0}: the higher bands do not change the picture')
    finally:
        if page:
            page.close()
        server.terminate()
        server.wait(10)
    result = {k: round(v, 2) for k, v in result.items()}
    result['failures'] = failures
    print(json.dumps(result))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
