#!/usr/bin/python3
"""Roofline of a timed CUDA run: per stage of a training step, the fewest bytes it must move through
device memory and the FP32 operations it must do, from the workload the run counted, set against
the stage's measured time and the GPU's two ceilings.

    tools/bench/roofline.py RUN.json [--bandwidth BYTES_PER_S] [--fp32 FLOP_PER_S] [--title TEXT]

RUN.json is the metrics.json of `splat train DATA --timing` or the --out file of
`splat bench replay --checkpoint C DATA --timing --out RUN.json`. Both carry the backend's report:
ms.STAGE (mean GPU milliseconds per step of each stage, CUDA events), work.* (the workload per step,
counted under --timing only: src/cuda/step_engine.cpp, add_work) and isect.mean_per_step. Prints a
markdown table. All figures are means per step: a training run's mean over a model that grew and a
coarse-to-fine image size; a replay's at one fixed model (the steady state).

What "fewest bytes" means here: each array a stage's kernels read is read once from device memory
and each array they write is written once; re-reads through L1/L2 (a splat's record read by every
warp of every tile it touches, the loss's halos) are not counted, so achieved bandwidth is a lower
bound on what the memory system delivered and the floor is a true floor. A radix sort counts its
passes over the data (it cannot sort in one). FP32 operations count the arithmetic of the per-item
formulas as the kernels write them (a fused multiply-add is 2, every add, multiply, min, max,
compare, square root, division and special function 1); index arithmetic, shuffles and atomics are
not FP32 work and are not counted. The rasterizer's per-pixel work is counted up to the last list
entry each pixel blended (work.blend_visits), not over the whole list (work.list_visits).

Ceilings (--bandwidth, --fp32): the defaults are the H200's device-to-device copy bandwidth
measured on this project's GPU machine (about 4.3 TB/s counting bytes read and written;
/work/.library/device/KINDS.md, 2026-10-28 and 2026-11-04) and the datasheet's plain FP32 rate,
67 TFLOP/s (not measured here). A stage's floor is the larger of bytes / bandwidth and
FLOP / rate; its bound is whichever that is; "x floor" is its time over the floor.

Reading it: the rasterizer passes count FP32 work only; their exponentials and reciprocals also
run on the special-function units, so a pass far from both ceilings is bound by instruction issue
or latency, which Nsight Compute (tools/gpu-machine/kernels.sh) tells apart.
"""
import argparse
import json
import math
import sys

H200_COPY_BANDWIDTH = 4.3e12  # bytes/s, measured (KINDS.md)
H200_FP32_DATASHEET = 67e12  # FLOP/s, datasheet

F32 = 4  # bytes of a float, int32 or uint32
SPLAT_FLOATS = 11  # means 3, log_scales 3, quats 4, raw_opacity 1 (without SH)
RADIX_BITS = 8  # CUB's onesweep radix sort of 32-bit keys: 8 bits a pass (tuning_radix_sort.cuh)
DEPTH_KEY_BITS = 24  # tiles::kDepthKeyBits (engine/tiles.h)
TILE_ORDER_BITS = 16  # kTileOrderBits (cuda/intersect_fwd.cu)
SEGMENTS = 8  # kSegments (cuda/rasterize_cuda.h)

# FP32 operations per item, counted from the kernels (see the module docstring for the rules).
# splat_geometry (cuda/project_math.cuh): camera transform 18, quaternion norm 13, rotation 39,
# scales 3, R_cam Rq S 54, Jacobian with its clamp 36, A = J RM 18, cov2d 15, minors and det 14,
# low-pass 6, mip compensation 3, validity 2.
F_GEOMETRY = 221
# project_fwd for every splat: the geometry, sigmoid 4, opacity test 1, extent 6, screen mean 6.
F_PROJECT_ALL = F_GEOMETRY + 17
# ... and for a kept one: radii 6, image bounds 8, conic 5, view direction 13, SH basis to degree
# 3 42, color clamp 3; then 6 per active SH coefficient (three channels' multiply-adds).
F_PROJECT_KEPT = 77
F_PER_SH_COEFF = 6
# project_bwd for a kept splat (splat_bwd): the geometry again, the color and SH basis chain 150,
# opacity 10, conic and determinants 50, Jacobian and rotation-scale 69, camera-space mean 30,
# world mean 18, through R 45, scales 30, quaternion 119; 15 per active SH coefficient (color,
# weight and gradient).
F_PROJECT_BWD_KEPT = F_GEOMETRY + 521
F_PROJECT_BWD_PER_SH_COEFF = 15
# One Adam element (cuda/adam_cuda.cuh, adam_element): gradient scale 1, first moment 3, second
# 4, step 7, sparse test 1.
F_ADAM_ELEMENT = 16
# The tile test of one candidate tile (tiles::reaches): corners 6, inside test 4, four edge minima
# of 12, their minimum 3, the bound 1. count_kernel and emit_kernel each run it; the candidates are
# at least the intersections, so 2 * I tests is a lower bound.
F_TILE_TEST = 62
F_INTERSECT_SPLAT = 20  # box and record of each splat (count_kernel)
# One rasterizer forward visit (rasterize_fwd_kernel: alpha_at and blend): offsets 2, power 7,
# falloff 2, alpha 2, three tests, transmittance 3, a * T 1, three color multiply-adds 6.
F_RASTER_FWD_VISIT = 26
# One backward visit (rasterize_bwd_kernel: visit_at and gradient): the forward's alpha again 16,
# the gradient 52, and the 9 sums it adds to (before the warp's reduction and the atomics).
F_RASTER_BWD_VISIT = 77
# L1 + SSIM per pixel (cuda/loss_cuda.cu), three channels, blurs counted once per pixel (the
# tiles' halos not counted): moments horizontal 143 and vertical 110, SSIM and its partials 45,
# L1 and weights 4; the partials' horizontal 66 and vertical 66 blurs, the gradient 10.
F_LOSS_SSIM_PIXEL = 3 * (143 + 110 + 45 + 4 + 66 + 66 + 10)
F_LOSS_L1_PIXEL = 3 * 6
F_NOISE_SPLAT = 135  # noise_kernel: quaternion 12, rotation 39, 3 normals 30, scales 6, Sigma z 39, gate 9
F_ADC_VISIBLE = 8  # accumulate_kernel: the screen-gradient norm and its sum


def radix_sort_bytes(items, key_bits):
    """A stable LSD radix sort of (uint32 key, uint32 value) pairs over key_bits bits: one histogram
    pass reads the keys, then each pass reads and writes keys and values."""
    passes = math.ceil(key_bits / RADIX_BITS)
    return items * (F32 + passes * 4 * F32)


class Work:
    """The workload of one step, from the report's means per step (sums over the step's views)."""

    def __init__(self, report):
        def get(key):
            if key not in report:
                raise KeyError(key)
            return float(report[key])

        self.views = get('work.views')
        self.N = get('work.splats')  # splats in the model
        self.NK = get('work.sh_coeffs')  # splats x stored SH coefficients per channel
        self.Nv = get('work.visible')  # splats the projection kept
        self.NvKa = get('work.visible_sh_coeffs')  # kept splats x active SH coefficients
        self.N_sh_adam = get('work.sh_adam_splats')  # splats whose SH Adam runs in project_bwd
        self.N_filter = get('work.filter3d_splats')  # splats with the 3D filter (0: off)
        self.P = get('work.pixels')
        self.T = get('work.tiles')
        self.target_bytes = get('work.target_bytes')  # the 8-bit training images' bytes
        self.P_ssim = get('work.ssim_pixels')  # pixels of an l1_ssim loss (0: l1 or l2)
        self.E_list = get('work.list_visits')  # sum over tiles of list length x pixels
        self.E = get('work.blend_visits')  # sum over pixels of entries up to the last blended
        self.B = get('work.boundary_reads')  # segment-boundary records (float4) the backward reads
        self.N_noise = get('work.noise_splats')
        self.N_adc = get('work.adc_splats')
        self.Nv_adc = get('work.adc_visible')
        self.I = get('isect.mean_per_step')  # tile-splat intersections
        steps = float(report.get('engine.steps_retired', 0)) or 1.0
        # Fractions of the steps that took each path.
        self.deterministic = float(report.get('engine.deterministic_steps', 0)) / steps
        self.sh_in_backward = float(report.get('engine.sh_adam_in_backward_steps', 0)) / steps
        self.K = self.NK / self.N if self.N else 0.0
        # The tile key's bits (tile_key_bits): enough for every tile id and one more value.
        tiles_per_view = self.T / self.views if self.views else 0.0
        self.tile_bits = max(1, int(tiles_per_view).bit_length())


def project(w):
    """project_fwd: reads means 12, log_scales 12, quats 16, raw_opacity 4 and the whole SH slice
    12 K of every splat (staged per block, culled splats too), the 3D filter 4 where on; writes
    means2d 8, depths 4, conics 12, radii 8, colors 12, opacities 4 of every splat."""
    read = w.N * (44 + 12 * w.K) + w.N_filter * F32
    write = w.N * 48
    flops = w.N * F_PROJECT_ALL + w.Nv * F_PROJECT_KEPT + w.NvKa * F_PER_SH_COEFF
    return read + write, flops


def intersect(w):
    """intersect_count: reads means2d 8, radii 8, conics 12, colors 12, opacities 4, depths 4 of
    every splat and writes its tile test 32, rasterizer record 48, depth key 4, index 4, tile count 4;
    depth_order: the radix sort of N (key, index) pairs over 24 bits; intersect_scan: order 4 and
    counts 4 read, offsets 4 written; intersect_emit: order 4, offsets 4 and tests 32 of every splat
    read, (tile, splat) pairs 8 written per intersection. The stage's time also holds the host's
    read of the intersection count (exact sizing), which the GPU waits out idle."""
    count = w.N * (48 + 92)
    depth = radix_sort_bytes(w.N, DEPTH_KEY_BITS)
    scan = w.N * 12
    emit = w.N * 40 + w.I * 8
    flops = w.N * F_INTERSECT_SPLAT + 2 * w.I * F_TILE_TEST
    return count + depth + scan + emit, flops


def sort(w):
    """sort_intersections: the radix sort of I (tile, splat) pairs over the tile key's bits;
    tile_ranges: ranges zeroed 8 T, sorted keys read 4 I, ranges written 8 T; tile_order: counts
    read 8 T and written 8 T, the sort of T pairs over 16 bits. No floating point."""
    pairs = radix_sort_bytes(w.I, w.tile_bits)
    ranges = w.T * 16 + w.I * F32
    order = w.T * 16 + radix_sort_bytes(w.T, TILE_ORDER_BITS)
    return pairs + ranges + order, 0.0


def rasterize(w):
    """rasterize_fwd: reads the tile order 4 T and ranges 8 T, the sorted splat ids 4 I and each
    kept splat's 48-byte record once; writes image 12, alpha 4 and last 4 per pixel and the
    segment-boundary records (16 bytes each; counted as the backward's reads of them, which the
    forward writes at least). FP32: one forward visit per blended-up-to entry and pixel."""
    read = w.T * 12 + w.I * F32 + w.Nv * 48
    write = w.P * 20 + w.B * 16
    return read + write, w.E * F_RASTER_FWD_VISIT


def loss(w):
    """photometric_loss, l1_ssim: the moments kernel reads the image 12 and the 8-bit target per
    pixel, writes 9 partials 36; the gradient kernel reads the partials 36, image 12 and target,
    writes the image gradient 12. l1 / l2: one kernel reads image and target, writes the gradient."""
    ssim = w.P_ssim / w.P if w.P else 0.0  # 1 for an l1_ssim loss, else 0
    read_write = w.P_ssim * (12 + 36 + 36 + 12 + 12) + (w.P - w.P_ssim) * (12 + 12)
    target = w.target_bytes * (2 * ssim + (1 - ssim))
    flops = w.P_ssim * F_LOSS_SSIM_PIXEL + (w.P - w.P_ssim) * F_LOSS_L1_PIXEL
    return read_write + target, flops


def rasterize_bwd(w):
    """rasterize_bwd: reads tile order and ranges 12 T, sorted ids 4 I, each kept splat's record 48,
    per pixel image 12, alpha 4, last 4 and the image gradient 12, the boundary records 16 each.
    Gradients of the 9 projected values per kept splat: float atomics (36 bytes read and written
    back, after a memset of 36 N), or with backend.deterministic 64-bit fixed-point atomics (72
    bytes read and written back, after a memset of 72 N) and fixed_to_float (72 N read, 36 N
    written). FP32: one backward visit per blended entry and pixel."""
    common = w.T * 12 + w.I * F32 + w.Nv * 48 + w.P * 32 + w.B * 16
    atomic = w.N * 36 + w.Nv * 72
    fixed = w.N * 72 + w.Nv * 144 + w.N * (72 + 36)
    grads = w.deterministic * fixed + (1 - w.deterministic) * atomic
    return common + grads, w.E * F_RASTER_BWD_VISIT


def project_bwd(w):
    """project_bwd: reads radii 8 of every splat; for kept splats means 12, log_scales 12, quats 16,
    raw_opacity 4, conics 12, v_means2d 8, v_conics 12, v_colors 12, v_opacities 4 (the 3D filter 4
    where on); writes v_means 12, v_log_scales 12, v_quats 16, v_raw_opacity 4 of every splat. SH:
    with Adam in the backward (one view per step), the coefficients, m and v read and written for
    each updated splat (72 K bytes); else the coefficients read and their gradients written for
    every splat (24 K)."""
    base = w.N * (8 + 44) + w.Nv * 92 + w.N_filter * F32
    sh_adam = w.N_sh_adam * 72 * w.K
    sh_grads = (1 - w.sh_in_backward) * w.N * 24 * w.K
    flops = (w.Nv * F_PROJECT_BWD_KEPT + w.NvKa * F_PROJECT_BWD_PER_SH_COEFF
             + w.N_sh_adam * 3 * w.K * F_ADAM_ELEMENT)
    return base + sh_adam + sh_grads, flops


def adam(w):
    """adam_step: parameter, gradient, m and v read, parameter, m and v written (28 bytes an
    element) for means, log_scales, quats and opacity (11 floats a splat), and the SH coefficients
    (3 K) in steps whose backward does not update them. MCMC's regularizers add FP64 arithmetic,
    not counted."""
    elements = w.N * SPLAT_FLOATS + (1 - w.sh_in_backward) * w.N * 3 * w.K
    return elements * 28, elements * F_ADAM_ELEMENT


def noise(w):
    """mcmc_inject_noise: reads quats 16, log_scales 12, raw_opacity 4, means 12; writes means 12."""
    return w.N_noise * 56, w.N_noise * F_NOISE_SPLAT


def adc_stats(w):
    """adc_accumulate: reads radii 8 of every splat; for kept ones v_means2d 8 and the two
    statistics read and written (16)."""
    return w.N_adc * 8 + w.Nv_adc * 24, w.Nv_adc * F_ADC_VISIBLE


def batch_accumulate(w):
    """add_in_place of every view after the first: the model's gradients (11 + 3 K floats a
    splat) read twice and written once."""
    extra = (w.views - 1) / w.views if w.views else 0.0
    elements = extra * w.N * (SPLAT_FLOATS + 3 * w.K)
    return elements * 12, elements


MODELS = {
    'project': project,
    'intersect': intersect,
    'sort': sort,
    'rasterize': rasterize,
    'loss': loss,
    'rasterize_bwd': rasterize_bwd,
    'project_bwd': project_bwd,
    'adam': adam,
    'noise': noise,
    'adc_stats': adc_stats,
    'batch_accumulate': batch_accumulate,
}


# The stages in the order a step runs them (cuda/step_engine.cpp); the JSON files keep the report's
# keys sorted by name.
STAGE_ORDER = ['project', 'intersect', 'sort', 'rasterize', 'appearance', 'loss', 'rasterize_bwd',
               'project_bwd', 'batch_accumulate', 'adc_stats', 'allreduce', 'adam', 'noise']


def roofline(report, bandwidth, fp32):
    """Rows of (stage, ms, bytes, flops, floor_ms, bound) for every ms.* stage of the report, in
    the order a step runs them; bytes, flops, floor_ms and bound are None for a stage with no model
    (appearance, allreduce); last a total row over the modelled stages."""
    w = Work(report)
    rows = []
    total = [0.0, 0.0, 0.0, 0.0]
    stages = [k[3:] for k in report if k.startswith('ms.')]
    stages.sort(key=lambda st: STAGE_ORDER.index(st) if st in STAGE_ORDER else len(STAGE_ORDER))
    for stage in stages:
        ms = float(report['ms.' + stage])
        model = MODELS.get(stage)
        if model is None:
            rows.append((stage, ms, None, None, None, None))
            continue
        nbytes, flops = model(w)
        t_mem, t_fp = nbytes / bandwidth * 1e3, flops / fp32 * 1e3
        floor = max(t_mem, t_fp)
        rows.append((stage, ms, nbytes, flops, floor, 'memory' if t_mem >= t_fp else 'compute'))
        for i, v in enumerate((ms, nbytes, flops, floor)):
            total[i] += v
    rows.append(('total (modelled)', total[0], total[1], total[2], total[3], None))
    return w, rows


def fmt(v, digits):
    return '-' if v is None else f'{v:,.{digits}f}'


def markdown(title, w, rows, bandwidth, fp32):
    out = [f'### {title}', '']
    out.append(f'Per step (means): {w.N:,.0f} splats, {w.Nv:,.0f} kept by the projection, '
               f'{w.I:,.0f} tile-splat intersections, {w.P:,.0f} pixels in {w.T:,.0f} tiles '
               f'({w.views:g} view{"s" if w.views != 1 else ""}); SH {w.K:g} coefficients stored per '
               f'channel, {w.NvKa / w.Nv if w.Nv else 0:.2f} active; rasterizer visits: '
               f'{w.E:,.0f} up to each pixel\'s last blended entry of {w.E_list:,.0f} in the lists '
               f'({100 * w.E / w.E_list if w.E_list else 0:.1f}%), {w.B:,.0f} boundary records.')
    out.append('')
    out.append(f'Ceilings: {bandwidth / 1e12:.2f} TB/s memory, {fp32 / 1e12:.1f} TFLOP/s FP32 '
               f'(ridge {fp32 / bandwidth:.1f} FLOP/byte).')
    out.append('')
    out.append('| stage | ms | GB moved | GFLOP | FLOP/B | GB/s | GFLOP/s | % of BW | % of FP32 '
               '| bound | floor ms | x floor |')
    out.append('|---|---|---|---|---|---|---|---|---|---|---|---|')
    for stage, ms, nbytes, flops, floor, bound in rows:
        if nbytes is None:
            out.append(f'| {stage} | {ms:.4f} | not modelled | | | | | | | | | |')
            continue
        s = ms / 1e3
        gbs, gfs = nbytes / s / 1e9 if s else 0, flops / s / 1e9 if s else 0
        out.append(f'| {stage} | {ms:.4f} | {nbytes / 1e9:.4g} | {flops / 1e9:.4g} | '
                   f'{flops / nbytes if nbytes else 0:.2f} | {gbs:,.0f} | {gfs:,.0f} | '
                   f'{100 * nbytes / s / bandwidth if s else 0:.1f} | {100 * flops / s / fp32 if s else 0:.1f} | '
                   f'{bound or ""} | {floor:.4f} | {ms / floor if floor else 0:.1f} |')
    return '\n'.join(out) + '\n'


def load_report(path):
    with open(path) as f:
        j = json.load(f)
    report = j.get('backend_report')
    if not isinstance(report, dict):
        raise ValueError(f'{path}: no "backend_report" object (a metrics.json of splat train, or '
                         'the --out file of splat bench replay)')
    if not any(k.startswith('ms.') for k in report):
        raise ValueError(f'{path}: the backend report has no ms.* stage times: run with --timing '
                         '(backend.timing = true) on the cuda backend')
    if 'work.splats' not in report:
        raise ValueError(f'{path}: the backend report has no work.* counts: a build before they '
                         'were added, or a run without --timing')
    return report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('run', help='metrics.json of splat train --timing, or splat bench replay --out')
    ap.add_argument('--bandwidth', type=float, default=H200_COPY_BANDWIDTH,
                    help='memory ceiling, bytes/s (default: the H200 copy bandwidth measured here)')
    ap.add_argument('--fp32', type=float, default=H200_FP32_DATASHEET,
                    help='FP32 ceiling, FLOP/s (default: the H200 datasheet)')
    ap.add_argument('--title', help='heading of the table (default: the file name)')
    args = ap.parse_args(argv)
    if not (args.bandwidth > 0 and args.fp32 > 0):
        ap.error('--bandwidth and --fp32 must be positive')
    try:
        report = load_report(args.run)
        w, rows = roofline(report, args.bandwidth, args.fp32)
    except (OSError, ValueError) as e:
        print(f'error: {e}', file=sys.stderr)
        return 1
    except KeyError as e:
        print(f'error: {args.run}: the backend report has no {e.args[0]}', file=sys.stderr)
        return 1
    sys.stdout.write(markdown(args.title or args.run, w, rows, args.bandwidth, args.fp32))
    return 0


if __name__ == '__main__':
    sys.exit(main())
