#!/usr/bin/python3
"""Drives `splat view`'s page in headless Chromium (Selenium) and checks what it draws.

1. The page at a test camera, at that camera's exact size, against the CPU backend's render of
   the same camera (`splat render`'s PNG): PSNR above --min-psnr.
2. A drag to the left turns the view (the image changes), and the drag back returns it.
3. The N key jumps to the next dataset camera, which again matches its CPU render.
Prints one JSON object with the measured figures; exits non-zero when a check fails.
"""
import argparse
import base64
import contextlib
import json
import math
import os
import re
import struct
import subprocess
import sys
import time
import urllib.request
import zlib

from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.chrome.service import Service


def read_png_rgb(path):
    """8-bit RGB or RGBA PNG (no interlace) as (width, height, RGB bytes)."""
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', path
    pos, idat, header = 8, b'', None
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            header = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f'{path}: only 8-bit RGB/RGBA non-interlaced PNGs are read here')
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    rgb = b''.join(bytes(r[i] for i in range(len(r)) if i % bpp < 3) for r in rows)
    return width, height, rgb


def psnr(a, b):
    mse = sum((x - y) ** 2 for x, y in zip(a, b)) / len(a) / 255.0 ** 2
    return 99.0 if mse == 0 else min(99.0, -10 * math.log10(mse))  # 99: identical


def start_view(splat, *args):
    """`splat view ARGS --port 0`: the process and the URL it serves."""
    server = subprocess.Popen([splat, 'view', *args, '--port', '0'], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    match = re.search(r'(http://\S+)', line)
    if not match:
        server.kill()
        raise RuntimeError(f'splat view printed no URL: {line!r}')
    return server, match.group(1)


@contextlib.contextmanager
def viewing(splat, *args):
    """start_view as a context: the URL, and the server stopped on leaving."""
    server, base = start_view(splat, *args)
    try:
        yield base
    finally:
        server.terminate()
        server.wait(10)


def report(result, failures):
    """Prints the measured figures and the failures as one JSON object; the exit status."""
    result['failures'] = failures
    print(json.dumps(result))
    return 1 if failures else 0


class Page:
    def __init__(self, url, width, height):
        opts = webdriver.ChromeOptions()
        for flag in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--use-angle=swiftshader',
                     '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist', '--force-device-scale-factor=1',
                     f'--window-size={width},{height}'):
            opts.add_argument(flag)
        opts.binary_location = '/usr/bin/chromium'
        self.driver = webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=opts)
        self.driver.set_script_timeout(60)
        self.driver.get(url)

    def js(self, expr):
        return self.driver.execute_script('return ' + expr)

    def settled(self, timeout=120):
        """Waits for a frame that shows the current camera and model in a fresh depth order."""
        end = time.time() + timeout
        while time.time() < end:
            state = self.js('window.splatView && {settled: splatView.settled, frames: splatView.frames,'
                            ' error: splatView.error}')
            if state and state['error']:
                raise RuntimeError('page error: ' + state['error'])
            if state and state['settled'] and state['frames'] > 0:
                return
            time.sleep(0.1)
        raise TimeoutError(f'no settled frame within {timeout} s: {self.js("window.splatView && splatView.frames")}')

    def pixels(self):
        p = self.js('splatView.pixels()')
        return p['width'], p['height'], base64.b64decode(p['rgb'])

    def drag(self, dx):
        canvas = self.driver.find_element(By.ID, 'view')
        ActionChains(self.driver).move_to_element(canvas).click_and_hold().move_by_offset(dx, 0).release().perform()

    def close(self):
        self.driver.quit()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--splat', required=True)
    ap.add_argument('--model', required=True)
    ap.add_argument('--data', required=True)
    ap.add_argument('--renders', required=True, help="splat render's PNGs of the test views")
    ap.add_argument('--min-psnr', type=float, default=30.0)
    args = ap.parse_args()

    server, base = start_view(args.splat, args.model, args.data)
    page = None
    failures, result = [], {}
    try:
        scene = json.load(urllib.request.urlopen(base + 'scene'))
        tests = [c for c in scene['cameras'] if c['split'] == 'test']
        cam = tests[0]
        page = Page(base + '?camera=test:0&size=camera&frusta=0&hud=0', cam['width'] + 100, cam['height'] + 200)

        def compare(c, key):
            page.settled()
            w, h, got = page.pixels()
            rw, rh, want = read_png_rgb(os.path.join(args.renders, c['name'] + '.png'))
            if (w, h) != (rw, rh):
                failures.append(f'{key}: page drew {w}x{h}, the CPU render is {rw}x{rh}')
                return got
            result[key] = round(psnr(got, want), 2)
            if result[key] < args.min_psnr:
                failures.append(f'{key}: PSNR {result[key]} dB against the CPU render, below {args.min_psnr}')
            return got

        first = compare(cam, 'psnr_test0')
        page.drag(-50)
        page.settled()
        turned = page.pixels()[2]
        result['psnr_after_drag'] = round(psnr(turned, first), 2)
        if result['psnr_after_drag'] > 30:
            failures.append(f'the drag left did not change the view (PSNR {result["psnr_after_drag"]} dB to before)')
        page.drag(50)
        page.settled()
        result['psnr_after_drag_back'] = round(psnr(page.pixels()[2], first), 2)
        if result['psnr_after_drag_back'] < 40:
            failures.append(f'the drag back did not return the view (PSNR {result["psnr_after_drag_back"]} dB)')
        if len(tests) > 1:
            page.driver.find_element(By.TAG_NAME, 'body').send_keys('n')
            compare(tests[1], 'psnr_test1')
    finally:
        if page:
            page.close()
        server.terminate()
        server.wait(10)
    result['failures'] = failures
    print(json.dumps(result))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
