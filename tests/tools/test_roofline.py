#!/usr/bin/python3
"""tools/bench/roofline.py's arithmetic on a small report whose figures are worked out by hand
below (ctest: Tools.RooflineArithmetic)."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools', 'bench'))
import roofline  # noqa: E402

# One view a step: 1,000 splats with 16 SH coefficients per channel stored, 600 kept with all 16
# active, 500 updated by sparse SH Adam in the backward; 10,000 pixels in 40 tiles, 5,000
# intersections; deterministic gradients; l1_ssim on an RGB target.
REPORT = {
    'ms.project': 0.1,
    'ms.sort': 0.2,
    'ms.rasterize': 1.0,
    'ms.appearance': 0.01,
    'ms.adam': 0.05,
    'work.views': 1,
    'work.splats': 1000,
    'work.sh_coeffs': 16000,
    'work.visible': 600,
    'work.visible_sh_coeffs': 9600,
    'work.sh_adam_splats': 500,
    'work.filter3d_splats': 0,
    'work.pixels': 10000,
    'work.tiles': 40,
    'work.target_bytes': 30000,
    'work.ssim_pixels': 10000,
    'work.list_visits': 2e6,
    'work.blend_visits': 5e5,
    'work.boundary_reads': 1000,
    'work.noise_splats': 1000,
    'work.adc_splats': 0,
    'work.adc_visible': 0,
    'isect.mean_per_step': 5000,
    'engine.steps_retired': 10,
    'engine.deterministic_steps': 10,
    'engine.sh_adam_in_backward_steps': 10,
}
BANDWIDTH, FP32 = 1e10, 1e11  # bytes/s, FLOP/s


class Arithmetic(unittest.TestCase):
    def setUp(self):
        self.work, rows = roofline.roofline(REPORT, BANDWIDTH, FP32)
        self.rows = {r[0]: r for r in rows}

    def test_project(self):
        # bytes: 1000 x (44 + 12 x 16) read + 1000 x 48 written = 236,000 + 48,000
        # FLOP: 1000 x 238 (every splat) + 600 x 77 (kept) + 9600 x 6 (active coefficients)
        _, ms, nbytes, flops, floor, bound = self.rows['project']
        self.assertEqual(nbytes, 284000)
        self.assertEqual(flops, 238000 + 46200 + 57600)
        self.assertAlmostEqual(floor, 284000 / 1e10 * 1e3)  # 0.0284 ms, above 0.0034 of FP32
        self.assertEqual(bound, 'memory')

    def test_rasterize(self):
        # read: tiles 40 x 12 + ids 5000 x 4 + records 600 x 48 = 480 + 20,000 + 28,800
        # written: pixels 10,000 x 20 + boundary records 1,000 x 16 = 216,000
        # FLOP: 500,000 visits x 26 = 13,000,000: 0.13 ms at 1e11, over 0.0265 ms of bytes
        _, ms, nbytes, flops, floor, bound = self.rows['rasterize']
        self.assertEqual(nbytes, 49280 + 216000)
        self.assertEqual(flops, 13e6)
        self.assertAlmostEqual(floor, 0.13)
        self.assertEqual(bound, 'compute')

    def test_sort(self):
        # 40 tiles: 6 key bits, one radix pass: 5000 x (4 + 16) = 100,000; ranges 40 x 16 +
        # 5000 x 4 = 20,640; tile order 40 x 16 + 40 x (4 + 2 x 16) = 640 + 1,440 (16 bits: 2 passes)
        self.assertEqual(self.work.tile_bits, 6)
        self.assertEqual(self.rows['sort'][2], 100000 + 20640 + 2080)
        self.assertEqual(self.rows['sort'][3], 0)

    def test_adam(self):
        # SH updated in the backward in every step: 11 floats a splat, 28 bytes and 16 FLOP each
        self.assertEqual(self.rows['adam'][2], 11000 * 28)
        self.assertEqual(self.rows['adam'][3], 11000 * 16)

    def test_unmodelled_stage_and_total(self):
        self.assertEqual(self.rows['appearance'][2:], (None, None, None, None))
        total = self.rows['total (modelled)']
        self.assertAlmostEqual(total[1], 0.1 + 0.2 + 1.0 + 0.05)  # appearance left out
        self.assertEqual(total[2], sum(self.rows[s][2] for s in ('project', 'sort', 'rasterize', 'adam')))

    def test_modes_change_the_bytes(self):
        # Float atomics instead of fixed point: 36 N + 72 Nv against 180 N + 144 Nv in rasterize_bwd.
        atomics = dict(REPORT, **{'engine.deterministic_steps': 0})
        fixed = roofline.rasterize_bwd(roofline.Work(REPORT))[0]
        floats = roofline.rasterize_bwd(roofline.Work(atomics))[0]
        self.assertEqual(fixed - floats, 1000 * (180 - 36) + 600 * (144 - 72))
        # SH gradients written for Adam's launch (a batch): 24 K bytes a splat in project_bwd, and
        # 3 K more Adam elements.
        batch = dict(REPORT, **{'engine.sh_adam_in_backward_steps': 0, 'work.sh_adam_splats': 0})
        self.assertEqual(roofline.project_bwd(roofline.Work(batch))[0] -
                         roofline.project_bwd(roofline.Work(REPORT))[0], 1000 * 24 * 16 - 500 * 72 * 16)
        self.assertEqual(roofline.adam(roofline.Work(batch))[0], 1000 * (11 + 48) * 28)


class Command(unittest.TestCase):
    def run_tool(self, content, *args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'metrics.json')
            with open(path, 'w') as f:
                json.dump(content, f)
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                rc = roofline.main([path, *args])
            return rc, out.getvalue(), err.getvalue()

    def test_table(self):
        rc, out, err = self.run_tool({'backend_report': REPORT}, '--bandwidth', '1e10', '--fp32', '1e11',
                                     '--title', 'hand case')
        self.assertEqual(rc, 0, err)
        self.assertIn('### hand case', out)
        # 284,000 B and 341,800 FLOP in 0.1 ms: 2.84 GB/s (28.4% of 10 GB/s), 3.418 GFLOP/s;
        # floor 0.0284 ms, 3.5x.
        self.assertIn('| project | 0.1000 | 0.000284 | 0.0003418 | 1.20 | 3 | 3 | 28.4 | 3.4 | memory | 0.0284 | 3.5 |',
                      out)
        self.assertIn('| appearance | 0.0100 | not modelled |', out)

    def test_bad_input(self):
        rc, _, err = self.run_tool({'backend_report': {'ms.project': 1.0}})
        self.assertEqual(rc, 1)
        self.assertIn('no work.* counts', err)
        rc, _, err = self.run_tool({'backend_report': {'work.splats': 1}})
        self.assertEqual(rc, 1)
        self.assertIn('run with --timing', err)
        rc, _, err = self.run_tool({'iterations': 3})
        self.assertEqual(rc, 1)
        self.assertIn('no "backend_report"', err)
        missing = dict(REPORT)
        del missing['work.boundary_reads']
        rc, _, err = self.run_tool({'backend_report': missing})
        self.assertEqual(rc, 1)
        self.assertIn('no work.boundary_reads', err)


if __name__ == '__main__':
    unittest.main()
