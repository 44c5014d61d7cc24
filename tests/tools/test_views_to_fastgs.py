#!/usr/bin/python3
"""tools/peer/views_to_fastgs.py on fake exports (tools/peer/fake_views.py), read back as FastGS's
readers read them (ctest: Tools.ViewsToFastgs): the COLMAP layout keeps every view's size, focal
lengths, pose and bytes, puts splat's held-out views where FastGS's --eval holds out (every 8th
image in name order) and writes the points; the Blender layout is kept for one field of view."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import numpy as np

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools', 'peer')


def run(*args):
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def read_png(path):
    data = open(path, 'rb').read()
    w, h = struct.unpack('>II', data[16:24])
    pos, idat = 8, b''
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        if kind == b'IDAT':
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 3 * w + 1)
    assert (raw[:, 0] == 0).all()  # no filtering
    return raw[:, 1:].reshape(h, w, 3)


def rotation(qw, qx, qy, qz):
    """COLMAP's qvec2rotmat."""
    return np.array([
        [1 - 2 * qy * qy - 2 * qz * qz, 2 * qx * qy - 2 * qw * qz, 2 * qz * qx + 2 * qw * qy],
        [2 * qx * qy + 2 * qw * qz, 1 - 2 * qx * qx - 2 * qz * qz, 2 * qy * qz - 2 * qw * qx],
        [2 * qz * qx - 2 * qw * qy, 2 * qy * qz + 2 * qw * qx, 1 - 2 * qx * qx - 2 * qy * qy]])


def records(path):
    """Non-comment lines of a COLMAP text file, split."""
    return [line.split() for line in open(path) if line.strip() and not line.startswith('#')]


class ViewsToFastgs(unittest.TestCase):
    def export(self, tmp, *args):
        views = os.path.join(tmp, 'views')
        rc, out = run(os.path.join(PEER, 'fake_views.py'), views, *args)
        self.assertEqual(rc, 0, out)
        return views, json.load(open(os.path.join(views, 'views.json')))

    def test_colmap_layout_keeps_views_split_and_points(self):
        with tempfile.TemporaryDirectory() as tmp:
            views, meta = self.export(tmp, '--train', '14', '--test', '3', '--points', '50')
            out = os.path.join(tmp, 'fastgs')
            rc, text = run(os.path.join(PEER, 'views_to_fastgs.py'), views, out)
            self.assertEqual(rc, 0, text)
            layout = json.load(open(os.path.join(out, 'peer_layout.json')))
            self.assertEqual(layout['layout'], 'colmap')
            self.assertEqual(layout['points'], 50)
            sparse = os.path.join(out, 'sparse', '0')
            cams = {r[0]: r for r in records(os.path.join(sparse, 'cameras.txt'))}
            images = sorted(records(os.path.join(sparse, 'images.txt')), key=lambda r: r[9])
            self.assertEqual(len(images), 17)
            train, test = iter(meta['train']), iter(meta['test'])
            for i, r in enumerate(images):
                v = next(test) if i % 8 == 0 else next(train)  # FastGS's --eval split
                w2c = np.array(v['world_to_camera'])
                np.testing.assert_allclose(rotation(*map(float, r[1:5])), w2c[:3, :3], atol=1e-12)
                np.testing.assert_allclose(np.array(r[5:8], float), w2c[:3, 3], atol=1e-12)
                c = cams[r[8]]
                self.assertEqual(c[1], 'PINHOLE')
                self.assertEqual((int(c[2]), int(c[3])), (v['width'], v['height']))
                self.assertEqual([float(x) for x in c[4:8]], [v['fx'], v['fy'], v['cx'], v['cy']])
                np.testing.assert_array_equal(read_png(os.path.join(out, 'images', r[9])),
                                              np.load(os.path.join(views, v['image'])))
            ply = open(os.path.join(sparse, 'points3D.ply'), 'rb').read()
            header, body = ply.split(b'end_header\n')
            self.assertIn(b'element vertex 50', header)
            rows = np.frombuffer(body, [(c, '<f4') for c in ('x', 'y', 'z', 'nx', 'ny', 'nz')] +
                                 [(c, 'u1') for c in ('red', 'green', 'blue')])
            p = np.load(os.path.join(views, 'points.npy'))
            np.testing.assert_array_equal(np.stack([rows[c] for c in 'xyz'], 1), p[:, :3])
            np.testing.assert_array_equal(rows['red'], np.round(p[:, 3] * 255).astype(np.uint8))

    def test_a_split_the_every_8th_rule_cannot_give_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            views, _ = self.export(tmp, '--train', '6', '--test', '2')
            rc, text = run(os.path.join(PEER, 'views_to_fastgs.py'), views, os.path.join(tmp, 'o'))
            self.assertNotEqual(rc, 0)
            self.assertIn('every 8th', text)
            self.assertIn('views.json', text)

    def test_one_field_of_view_without_points_keeps_the_blender_layout(self):
        with tempfile.TemporaryDirectory() as tmp:
            views, meta = self.export(tmp, '--train', '6', '--test', '2', '--no-points')
            for v in meta['train'] + meta['test']:  # one size and focal length, as NeRF-synthetic
                img = np.load(os.path.join(views, v['image']))[:24, :32]
                np.save(os.path.join(views, v['image']), np.ascontiguousarray(img))
                v.update(width=32, height=24, fx=28.8, fy=28.8, cx=16.0, cy=12.0)
            json.dump(meta, open(os.path.join(views, 'views.json'), 'w'))
            out = os.path.join(tmp, 'fastgs')
            rc, text = run(os.path.join(PEER, 'views_to_fastgs.py'), views, out)
            self.assertEqual(rc, 0, text)
            self.assertEqual(json.load(open(os.path.join(out, 'peer_layout.json')))['layout'], 'blender')
            frames = json.load(open(os.path.join(out, 'transforms_test.json')))['frames']
            self.assertEqual(len(frames), 2)
            self.assertFalse(os.path.exists(os.path.join(out, 'sparse')))


if __name__ == '__main__':
    unittest.main()
