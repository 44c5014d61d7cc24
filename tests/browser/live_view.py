#!/usr/bin/python3
"""Checks `splat train --view`: while a short CPU run trains, polls /info as the page does and
sees the snapshot version and the step advance, fetches /model at a later version and /metrics'
records, optionally (--browser) watches the page itself load newer snapshots, then sees the run
finish, keep serving the final model, and stop cleanly on SIGINT.
Prints one JSON object with what it saw; exits non-zero when a check fails.
"""
import argparse
import json
import re
import signal
import struct
import subprocess
import sys
import time
import urllib.request


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--splat', required=True)
    ap.add_argument('--data', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--iterations', type=int, default=800)
    ap.add_argument('--browser', action='store_true', help='also watch the page in headless Chromium')
    args = ap.parse_args()
    train = subprocess.Popen([args.splat, 'train', args.data, '--out', args.out, '--overwrite', '--view', '0',
                              '--view-every', '0.3', '--set', f'train.iterations={args.iterations}', '--set',
                              'model.init_points=2000', '--set', 'train.eval_every=50', '--set', 'train.log_every=10'],
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    failures, seen = [], {'versions': [], 'steps': []}
    page = None
    try:
        base = None
        for line in train.stderr:
            m = re.search(r'live view at (http://\S+)', line)
            if m:
                base = m.group(1)
                break
        if not base:
            raise RuntimeError('splat train --view printed no URL')
        # The first snapshot before the browser starts: a loaded machine may take seconds to start it.
        # The server answers before training publishes its first progress (null until then).
        deadline, info = time.time() + 120, json.loads(get(base + 'info'))
        while info['progress'] is None and time.time() < deadline:
            time.sleep(0.05)
            info = json.loads(get(base + 'info'))
        seen['versions'].append(info['version'])
        seen['steps'].append(info['progress']['step'])
        if args.browser:
            sys.path.insert(0, __file__.rsplit('/', 1)[0])
            from view_page import Page
            page = Page(base + '?hud=1', 400, 300)
        page_versions = []
        end, info = time.time() + 600, {}
        while time.time() < end:
            info = json.loads(get(base + 'info'))
            seen['versions'].append(info['version'])
            seen['steps'].append(info['progress']['step'])
            if page:
                page_versions.append(page.js('window.splatView ? splatView.version : 0'))
            if info['progress']['done']:
                break
            time.sleep(0.3)
        blob = get(base + 'model')
        magic, layout, count, version, degree = struct.unpack('<4sIIII', blob[:20])
        seen['final'] = {'version': version, 'splats': count, 'sh_degree': degree, 'bytes': len(blob)}
        records = json.loads(get(base + 'metrics'))
        seen['metrics_records'] = len(records)
        seen['evals'] = sum(1 for r in records if 'eval' in r)
        if page:
            # The page polls each second: it ends on the final snapshot, having shown an earlier one.
            deadline = time.time() + 60
            while page.js('splatView.version') != version and time.time() < deadline:
                time.sleep(0.2)
            page.settled()
            page_versions.append(page.js('splatView.version'))
            seen['page_versions'] = sorted(set(v for v in page_versions if v > 0))
            if page_versions[-1] != version or len(seen['page_versions']) < 2:
                failures.append(f'the page showed snapshots {seen["page_versions"]}, not earlier ones and the '
                                f'final {version}')
        if not info.get('progress', {}).get('done'):
            failures.append('training did not finish')
        if info['progress']['step'] != args.iterations:
            failures.append(f'final step {info["progress"]["step"]}, not {args.iterations}')
        distinct = sorted(set(seen['versions']))
        if len(distinct) < 3:
            failures.append(f'the snapshot version did not advance during training: {distinct}')
        coefficients = (degree + 1) ** 2 * 3 if degree > 0 else 0
        if magic != b'SPLV' or layout != 2 or len(blob) != 20 + (44 + 2 * coefficients) * count or \
                version != info['version'] or degree > info['sh_degree']:
            failures.append(f'/model: {seen["final"]} does not match /info version {info["version"]}')
        if not any(0 < s < args.iterations for s in seen['steps']):
            failures.append('no progress reported during training')
        if seen['evals'] < 1 or seen['metrics_records'] < 5:
            failures.append(f'/metrics: {seen["metrics_records"]} records, {seen["evals"]} evaluations')
        train.send_signal(signal.SIGINT)
        code = train.wait(60)
        if code != 0:
            failures.append(f'splat train exited {code} after SIGINT while serving the final model')
    finally:
        if page:
            page.close()
        if train.poll() is None:
            train.kill()
    seen['versions'] = sorted(set(seen['versions']))
    seen['steps'] = sorted(set(seen['steps']))
    seen['failures'] = failures
    print(json.dumps(seen))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
