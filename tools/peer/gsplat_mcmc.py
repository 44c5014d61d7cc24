#!/usr/bin/env python3
"""Trains gsplat (MCMC or default strategy) on a splat views export and writes a standard 3DGS .ply.

  python3 gsplat_mcmc.py VIEWS_DIR --out MODEL.ply [--strategy mcmc|default] [--mode own|same]
                         [--steps 30000] [--cap 1000000] [--init points|random|cube]
                         [--cube N EXTENT] [--seed 42] [--json RESULT.json] [--init-only]

--strategy default follows simple_trainer's default config (DefaultStrategy, init_opa 0.1,
init_scale 1.0, no opacity/scale regularisation); --strategy mcmc its "mcmc" config (below).
--cube N EXTENT (with --init cube): N random points in [-EXTENT, EXTENT]^3 of the export's world
(the splat protocol's cube, e.g. configs/lego.toml: 100000 1.3) instead of gsplat's default cube
of 3 x its scene scale; --init-opa/--init-scale override the strategy's initial opacity/scale.
--mode only labels the run in the JSON: own (each trainer's defaults) or same (splat's workload).
fused_ssim is required (simple_trainer's loss) unless --allow-torch-ssim. After training, the
held-out views are scored by gsplat's own renderer as simple_trainer's eval does (colors clamped
to [0, 1]; torchmetrics PSNR, SSIM and, where its weights load, LPIPS alex) into "own_metrics".

VIEWS_DIR is what `splat bench views DATA --out VIEWS_DIR` writes (views.json, format
splat-views-1, with uint8 [H, W, 3] .npy images already composited on the export's background).
The training follows the "mcmc" configuration of gsplat v1.5.3's examples/simple_trainer.py
(Config defaults plus init_opa=0.5, init_scale=0.1, opacity_reg=0.01, scale_reg=0.01,
MCMCStrategy()), with three deliberate differences, all recorded in the JSON:
  * the targets are the export's composited images, so the renders get the export's background
    (rasterization(..., backgrounds=...)); simple_trainer renders on black;
  * world normalisation: simple_trainer's Parser applies a similarity (rotation, translation,
    scale) to the world. Here only its translation and uniform scale are applied (rotating the
    world would rotate the SH coefficients on export), and the model is mapped back to the
    export's world frame before it is written, so `splat eval` renders it with the same cameras;
  * knn for the initial scales runs in torch (simple_trainer uses sklearn), with the squared
    distance clamped at 1e-7 as in the INRIA code, so duplicate points cannot give log(0).
Only the training loop is timed (torch.cuda.synchronize() before each clock read); gsplat's CUDA
extension is loaded (and JIT-built if needed) before the clock starts. This script does not
evaluate: `splat eval MODEL.ply DATA` does, on the same held-out views as splat's own models.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

SH_C0 = 0.28209479177387814


# ---- views export ----------------------------------------------------------------------------


def load_views(views_dir):
    with open(os.path.join(views_dir, "views.json")) as f:
        meta = json.load(f)
    if meta.get("format") != "splat-views-1":
        sys.exit(f"{views_dir}/views.json: format {meta.get('format')!r}, expected splat-views-1")
    for split in ("train", "test"):
        for v in meta.get(split, []):
            w2c = np.asarray(v["world_to_camera"], dtype=np.float64)
            if w2c.shape != (4, 4):
                sys.exit(f"{v['name']}: world_to_camera must be 4x4, got {w2c.shape}")
            v["w2c"] = w2c
            v["c2w"] = np.linalg.inv(w2c)
    if not meta.get("train"):
        sys.exit(f"{views_dir}/views.json: no training views")
    return meta


def load_image(views_dir, v):
    img = np.load(os.path.join(views_dir, v["image"]), allow_pickle=False)
    if img.dtype != np.uint8 or img.shape != (v["height"], v["width"], 3):
        sys.exit(f"{v['image']}: {img.dtype} {img.shape}, expected uint8 "
                 f"({v['height']}, {v['width']}, 3)")
    return np.ascontiguousarray(img)


def load_points(views_dir, meta):
    if not meta.get("points"):
        return None
    p = np.load(os.path.join(views_dir, meta["points"]), allow_pickle=False)
    if p.ndim != 2 or p.shape[1] != 6 or len(p) == 0:
        sys.exit(f"{meta['points']}: shape {p.shape}, expected [N, 6] with N > 0")
    return p.astype(np.float32)


# ---- gsplat's scene scale and world normalisation (examples/datasets/{colmap,normalize}.py) ----


def camera_spread(c2ws):
    """Parser.scene_scale: the max distance of the camera centres from their mean."""
    t = c2ws[:, :3, 3]
    return float(np.max(np.linalg.norm(t - t.mean(axis=0), axis=1)))


def similarity_from_cameras(c2w):
    """normalize.py similarity_from_cameras(center_method="focus", strict_scaling=False)."""
    t = c2w[:, :3, 3]
    R = c2w[:, :3, :3]
    ups = np.sum(R * np.array([0, -1.0, 0]), axis=-1)
    world_up = np.mean(ups, axis=0)
    world_up /= np.linalg.norm(world_up)
    up_camspace = np.array([0.0, -1.0, 0.0])
    c = (up_camspace * world_up).sum()
    cross = np.cross(world_up, up_camspace)
    skew = np.array([[0.0, -cross[2], cross[1]], [cross[2], 0.0, -cross[0]],
                     [-cross[1], cross[0], 0.0]])
    if c > -1:
        R_align = np.eye(3) + skew + (skew @ skew) * 1 / (1 + c)
    else:
        R_align = np.array([[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    R = R_align @ R
    fwds = np.sum(R * np.array([0, 0.0, 1.0]), axis=-1)
    t = (R_align @ t[..., None])[..., 0]
    nearest = t + (fwds * -t).sum(-1)[:, None] * fwds
    translate = -np.median(nearest, axis=0)
    scale = 1.0 / np.median(np.linalg.norm(t + translate, axis=-1))
    return R_align, translate, scale


def normalisation(c2ws, points):
    """The translation and uniform scale of simple_trainer's world normalisation, in the export's
    frame: x_normalised = scale * (x - centre). The centre is where gsplat puts the origin (the
    median of the points after T1, as align_principal_axes does; the cameras' focus point when
    there are no points); the scale is T1's. Rotations are left out (see the module docstring)."""
    R_align, translate, scale = similarity_from_cameras(c2ws)
    if points is not None:
        p1 = scale * ((R_align @ points[:, :3].astype(np.float64).T).T + translate)
        centre1 = np.median(p1, axis=0)  # in T1's frame
        centre = R_align.T @ (centre1 / scale - translate)
    else:
        centre = R_align.T @ (-translate)
    return float(scale), centre


# ---- model -----------------------------------------------------------------------------------


def knn_dist2_mean(x, k=3, chunk=4096):
    """Mean squared distance to the k nearest other points (simple_trainer: knn(points, 4)[:, 1:])."""
    out = torch.empty(len(x), device=x.device)
    for i in range(0, len(x), chunk):
        d = torch.cdist(x[i:i + chunk], x)  # [c, N]
        d2 = d.topk(min(k + 1, len(x)), dim=1, largest=False).values[:, 1:] ** 2
        out[i:i + chunk] = d2.mean(dim=1)
    return out


def init_splats(args, points, scene_scale, sh_degree, device, gen):
    """create_splats_with_optimizers' parameters (init_type sfm or random)."""
    if args.init == "points":
        if points is None:
            sys.exit("--init points: the export has no points (views.json 'points' is null)")
        means = torch.from_numpy(points[:, :3]).float()
        rgbs = torch.from_numpy(points[:, 3:6]).float()
    elif args.init == "cube":  # the splat protocol's cube, in the export's frame, normalised
        n = args.cube_points
        cube = args.cube_extent * (torch.rand((n, 3), generator=gen, dtype=torch.float64) * 2 - 1)
        means = (args.norm_scale * (cube - torch.from_numpy(args.norm_centre))).float()
        rgbs = torch.rand((n, 3), generator=gen)
    else:
        n = args.init_num_pts
        means = args.init_extent * scene_scale * (torch.rand((n, 3), generator=gen) * 2 - 1)
        rgbs = torch.rand((n, 3), generator=gen)
    means = means.to(device)
    dist2 = knn_dist2_mean(means).clamp_min(1e-7)
    scales = torch.log(torch.sqrt(dist2) * args.init_scale).unsqueeze(-1).repeat(1, 3)
    n = len(means)
    quats = torch.rand((n, 4), generator=gen).to(device)
    opacities = torch.logit(torch.full((n,), args.init_opa, device=device))
    colors = torch.zeros((n, (sh_degree + 1) ** 2, 3), device=device)
    colors[:, 0, :] = (rgbs.to(device) - 0.5) / SH_C0
    return {
        "means": means,
        "scales": scales,
        "quats": quats,
        "opacities": opacities,
        "sh0": colors[:, :1, :].contiguous(),
        "shN": colors[:, 1:, :].contiguous(),
    }


def write_ply(path, splats, centre, scale):
    """Standard 3DGS layout, binary little-endian float32, in the export's world frame. Rows with
    a NaN or inf are dropped, as gsplat's exporter does; returns (written, dropped)."""
    with torch.no_grad():
        means = splats["means"].detach().double().cpu() / scale + torch.from_numpy(centre)
        log_scales = splats["scales"].detach().double().cpu() - math.log(scale)
        n = len(means)
        sh0 = splats["sh0"].detach().cpu().reshape(n, 3).double()
        shN = splats["shN"].detach().cpu().double()  # [N, K-1, 3]
        if shN.shape[1] != 15:
            sys.exit(f"internal: shN has {shN.shape[1]} coefficients, expected 15 (degree 3)")
        f_rest = shN.permute(0, 2, 1).reshape(n, -1)  # channel-major, as 3DGS and gsplat write
        rows = torch.cat([means, torch.zeros(n, 3, dtype=torch.float64), sh0, f_rest,
                          splats["opacities"].detach().double().cpu().reshape(n, 1), log_scales,
                          splats["quats"].detach().double().cpu()], dim=1).float()
    ok = torch.isfinite(rows).all(dim=1)
    rows = rows[ok].numpy().astype("<f4")
    names = (["x", "y", "z", "nx", "ny", "nz"] + [f"f_dc_{i}" for i in range(3)] +
             [f"f_rest_{i}" for i in range(45)] + ["opacity"] +
             [f"scale_{i}" for i in range(3)] + [f"rot_{i}" for i in range(4)])
    assert rows.shape[1] == len(names) == 62
    header = "ply\nformat binary_little_endian 1.0\nelement vertex %d\n" % len(rows)
    header += "".join(f"property float {n}\n" for n in names) + "end_header\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header.encode("ascii"))
        f.write(rows.tobytes())
    os.replace(tmp, path)
    return len(rows), int((~ok).sum())


# ---- loss ------------------------------------------------------------------------------------


def make_ssim():
    """fused_ssim if importable (simple_trainer's), else the same SSIM in plain torch: 11x11
    Gaussian window, sigma 1.5, C1 = 0.01^2, C2 = 0.03^2, 'valid' padding, mean over all."""
    try:
        from fused_ssim import fused_ssim

        return "fused_ssim", lambda a, b: fused_ssim(a, b, padding="valid")
    except ImportError:
        pass
    g = torch.exp(-((torch.arange(11, dtype=torch.float32) - 5) ** 2) / (2 * 1.5 ** 2))
    g = g / g.sum()
    win = (g[:, None] * g[None, :]).expand(3, 1, 11, 11).contiguous()
    cache = {}

    def ssim(a, b):  # [B, 3, H, W]
        w = cache.get(a.device)
        if w is None:
            w = cache[a.device] = win.to(a.device)
        conv = lambda x: torch.nn.functional.conv2d(x, w, groups=3)
        mu1, mu2 = conv(a), conv(b)
        s11 = conv(a * a) - mu1 * mu1
        s22 = conv(b * b) - mu2 * mu2
        s12 = conv(a * b) - mu1 * mu2
        c1, c2 = 0.01 ** 2, 0.03 ** 2
        m = ((2 * mu1 * mu2 + c1) * (2 * s12 + c2)) / ((mu1 * mu1 + mu2 * mu2 + c1) * (s11 + s22 + c2))
        return m.mean()

    return "torch (11x11 Gaussian, sigma 1.5, valid padding)", ssim


# ---- training --------------------------------------------------------------------------------


def train(args, meta, splats, scene_scale, bg, result, device):
    import gsplat
    from gsplat.cuda._backend import _C  # build/load the extension before the clock starts
    from gsplat.rendering import rasterization
    from gsplat.strategy import DefaultStrategy, MCMCStrategy

    if _C is None:
        sys.exit("gsplat's CUDA extension is unavailable (see the messages above)")
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    result["gsplat_version"] = gsplat.__version__
    ssim_name, ssim = make_ssim()
    if not ssim_name.startswith("fused") and not args.allow_torch_ssim:
        sys.exit("fused_ssim is not importable (simple_trainer trains with it); build it "
                 "(tools/peer/pack_gsplat.sh packs it) or pass --allow-torch-ssim")
    result["ssim"] = ssim_name

    views = meta["train"]
    images = [torch.from_numpy(load_image(args.views, v)).to(device) for v in views]
    viewmats, Ks = [], []
    for v in views:
        w2c = v["w2c"].copy()
        w2c[:3, 3] = args.norm_scale * (w2c[:3, 3] + w2c[:3, :3] @ args.norm_centre)
        viewmats.append(torch.tensor(w2c, dtype=torch.float32, device=device)[None])
        Ks.append(torch.tensor([[v["fx"], 0, v["cx"]], [0, v["fy"], v["cy"]], [0, 0, 1]],
                               dtype=torch.float32, device=device)[None])
    backgrounds = torch.tensor(bg, dtype=torch.float32, device=device)[None]  # [C=1, 3]

    params = torch.nn.ParameterDict(
        {k: torch.nn.Parameter(v.to(device)) for k, v in splats.items()})
    lrs = {"means": args.means_lr * scene_scale, "scales": args.scales_lr,
           "quats": args.quats_lr, "opacities": args.opacities_lr, "sh0": args.sh0_lr,
           "shN": args.shN_lr}
    # batch_size 1, world_size 1: lr * sqrt(1), eps 1e-15 / sqrt(1), betas (0.9, 0.999).
    optimizers = {k: torch.optim.Adam([{"params": params[k], "lr": lr, "name": k}], eps=1e-15,
                                      betas=(0.9, 0.999)) for k, lr in lrs.items()}
    if args.strategy == "mcmc":
        strategy = MCMCStrategy(cap_max=args.cap, verbose=args.verbose)
        state = strategy.initialize_state()
        keys = ("cap_max", "noise_lr", "refine_start_iter", "refine_stop_iter", "refine_every",
                "min_opacity")
    else:
        strategy = DefaultStrategy(verbose=args.verbose)
        state = strategy.initialize_state(scene_scale=scene_scale)
        keys = ("prune_opa", "grow_grad2d", "grow_scale3d", "prune_scale3d", "refine_start_iter",
                "refine_stop_iter", "reset_every", "refine_every", "absgrad")
    strategy.check_sanity(params, optimizers)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizers["means"],
                                                       gamma=0.01 ** (1.0 / args.steps))
    result["settings"].update({
        "lr": lrs, "strategy": {"name": args.strategy, **{k: getattr(strategy, k) for k in keys}}})
    absgrad = bool(getattr(strategy, "absgrad", False))

    gen = torch.Generator().manual_seed(args.seed)
    order = []
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    tic = time.perf_counter()
    for step in range(args.steps):
        if not order:  # DataLoader(shuffle=True): a fresh permutation each epoch
            order = torch.randperm(len(views), generator=gen).tolist()
        i = order.pop()
        pixels = images[i][None].float() / 255.0  # [1, H, W, 3]
        h, w = pixels.shape[1:3]
        sh_degree = min(step // args.sh_degree_interval, args.sh_degree)
        colors, _, info = rasterization(
            means=params["means"], quats=params["quats"], scales=torch.exp(params["scales"]),
            opacities=torch.sigmoid(params["opacities"]),
            colors=torch.cat([params["sh0"], params["shN"]], 1), viewmats=viewmats[i],
            Ks=Ks[i], width=w, height=h, sh_degree=sh_degree, near_plane=args.near_plane,
            far_plane=args.far_plane, packed=False, absgrad=absgrad, sparse_grad=False,
            rasterize_mode="classic", camera_model="pinhole", backgrounds=backgrounds,
            render_mode="RGB")
        strategy.step_pre_backward(params=params, optimizers=optimizers, state=state,
                                   step=step, info=info)
        l1 = torch.nn.functional.l1_loss(colors, pixels)
        ssim_loss = 1.0 - ssim(colors.permute(0, 3, 1, 2), pixels.permute(0, 3, 1, 2))
        loss = l1 * (1.0 - args.ssim_lambda) + ssim_loss * args.ssim_lambda
        if args.opacity_reg > 0.0:
            loss = loss + args.opacity_reg * torch.sigmoid(params["opacities"]).mean()
        if args.scale_reg > 0.0:
            loss = loss + args.scale_reg * torch.exp(params["scales"]).mean()
        loss.backward()
        for opt in optimizers.values():
            opt.step()
            opt.zero_grad(set_to_none=True)
        scheduler.step()
        if args.strategy == "mcmc":
            strategy.step_post_backward(params=params, optimizers=optimizers, state=state,
                                        step=step, info=info, lr=scheduler.get_last_lr()[0])
        else:
            strategy.step_post_backward(params=params, optimizers=optimizers, state=state,
                                        step=step, info=info, packed=False)
        if args.log_every and (step + 1) % args.log_every == 0:
            print(f"step {step + 1}/{args.steps}: loss {loss.item():.4f}, "
                  f"{len(params['means'])} splats, {time.perf_counter() - tic:.1f} s", flush=True)
    sync()
    result["train_seconds"] = time.perf_counter() - tic
    result["peak_memory_mib"] = torch.cuda.max_memory_allocated() / 2 ** 20 if cuda else 0.0
    result["device"] = torch.cuda.get_device_name() if cuda else str(device)
    with torch.no_grad():
        result["own_metrics"] = own_eval(args, meta, params, backgrounds, rasterization, device)
    return {k: v.detach() for k, v in params.items()}


def own_eval(args, meta, params, backgrounds, rasterization, device):
    """simple_trainer's eval on the export's held-out views: gsplat's render (alpha clamp 0.999)
    clamped to [0, 1], torchmetrics PSNR and SSIM (data_range 1) and LPIPS (alex, normalize=True)
    where its pretrained weights load (the GPU machine has no network: else lpips is null)."""
    views = meta.get("test", [])
    if not views:
        return None
    from torchmetrics.image import PeakSignalNoiseRatio, StructuralSimilarityIndexMeasure

    psnr = PeakSignalNoiseRatio(data_range=1.0).to(device)
    ssim = StructuralSimilarityIndexMeasure(data_range=1.0).to(device)
    try:
        from torchmetrics.image.lpip import LearnedPerceptualImagePatchSimilarity

        lpips = LearnedPerceptualImagePatchSimilarity(net_type="alex", normalize=True).to(device)
        lpips_note = "torchmetrics alex, normalize=True"
    except Exception as e:  # no weights offline
        lpips, lpips_note = None, f"unavailable: {type(e).__name__}: {e}"[:200]
    out = {"psnr": [], "ssim": [], "lpips": []}
    for v in views:
        w2c = v["w2c"].copy()
        w2c[:3, 3] = args.norm_scale * (w2c[:3, 3] + w2c[:3, :3] @ args.norm_centre)
        K = torch.tensor([[v["fx"], 0, v["cx"]], [0, v["fy"], v["cy"]], [0, 0, 1]],
                         dtype=torch.float32, device=device)[None]
        colors, _, _ = rasterization(
            means=params["means"], quats=params["quats"], scales=torch.exp(params["scales"]),
            opacities=torch.sigmoid(params["opacities"]),
            colors=torch.cat([params["sh0"], params["shN"]], 1),
            viewmats=torch.tensor(w2c, dtype=torch.float32, device=device)[None], Ks=K,
            width=v["width"], height=v["height"], sh_degree=args.sh_degree,
            near_plane=args.near_plane, far_plane=args.far_plane, packed=False,
            rasterize_mode="classic", camera_model="pinhole", backgrounds=backgrounds,
            render_mode="RGB")
        pred = torch.clamp(colors, 0.0, 1.0).permute(0, 3, 1, 2)
        gt = (torch.from_numpy(load_image(args.views, v)).to(device)[None].float() / 255.0
              ).permute(0, 3, 1, 2)
        out["psnr"].append(float(psnr(pred, gt)))
        out["ssim"].append(float(ssim(pred, gt)))
        if lpips is not None:
            out["lpips"].append(float(lpips(pred, gt)))
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    return {"psnr": mean(out["psnr"]), "ssim": mean(out["ssim"]), "lpips": mean(out["lpips"]),
            "lpips_note": lpips_note, "views": len(views), "alpha_max": 0.999,
            "scorer": "gsplat rasterization + torchmetrics (simple_trainer eval)"}


# ---- main ------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("views", help="directory written by `splat bench views`")
    ap.add_argument("--out", required=True, help="model .ply to write")
    ap.add_argument("--steps", type=int, default=30_000, help="max_steps (default 30000)")
    ap.add_argument("--cap", type=int, default=1_000_000, help="MCMCStrategy cap_max")
    ap.add_argument("--strategy", choices=["mcmc", "default"], default="mcmc")
    ap.add_argument("--mode", choices=["own", "same"], default="own",
                    help="label: each trainer's own defaults, or splat's workload")
    ap.add_argument("--init", choices=["points", "random", "cube"], default=None,
                    help="default: points when the export has them, else cube with --cube, "
                         "else random (gsplat's cube of 3 x scene scale)")
    ap.add_argument("--cube", nargs=2, type=float, metavar=("N", "EXTENT"),
                    help="--init cube: N points uniform in [-EXTENT, EXTENT]^3 (export frame)")
    ap.add_argument("--init-opa", type=float, help="override the strategy's init_opa")
    ap.add_argument("--init-scale", type=float, help="override the strategy's init_scale")
    ap.add_argument("--allow-torch-ssim", action="store_true",
                    help="train with the plain-torch SSIM when fused_ssim is missing")
    ap.add_argument("--seed", type=int, default=42, help="simple_trainer: set_random_seed(42)")
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--init-only", action="store_true",
                    help="write the initial model and exit (no gsplat, no GPU needed)")
    ap.add_argument("--no-normalize", action="store_true",
                    help="train in the export's frame (simple_trainer: normalize_world_space)")
    ap.add_argument("--device", default=None, help="torch device (default cuda, cpu for --init-only without CUDA)")
    ap.add_argument("--log-every", type=int, default=1000)
    ap.add_argument("--verbose", action="store_true", help="MCMCStrategy(verbose=True)")
    ap.add_argument("--allow-cpu", action="store_true", help=argparse.SUPPRESS)  # mock checks
    args = ap.parse_args()
    # simple_trainer's Config for "mcmc" (v1.5.3); not options, so runs stay comparable.
    args.init_num_pts, args.init_extent = 100_000, 3.0
    if args.strategy == "mcmc":
        init_opa, init_scale, args.opacity_reg, args.scale_reg = 0.5, 0.1, 0.01, 0.01
    else:  # simple_trainer's Config defaults
        init_opa, init_scale, args.opacity_reg, args.scale_reg = 0.1, 1.0, 0.0, 0.0
    args.init_opa = init_opa if args.init_opa is None else args.init_opa
    args.init_scale = init_scale if args.init_scale is None else args.init_scale
    args.sh_degree, args.sh_degree_interval = 3, 1000
    args.ssim_lambda = 0.2
    args.near_plane, args.far_plane = 0.01, 1e10
    args.means_lr, args.scales_lr, args.opacities_lr = 1.6e-4, 5e-3, 5e-2
    args.quats_lr, args.sh0_lr, args.shN_lr = 1e-3, 2.5e-3, 2.5e-3 / 20
    if args.steps <= 0 or args.cap <= 0:
        sys.exit("--steps and --cap must be positive")

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    meta = load_views(args.views)
    points = load_points(args.views, meta)
    if args.init is None:
        args.init = "points" if points is not None else ("cube" if args.cube else "random")
    if args.init == "cube":
        if not args.cube:
            sys.exit("--init cube needs --cube N EXTENT")
        args.cube_points, args.cube_extent = int(args.cube[0]), float(args.cube[1])
        if args.cube_points <= 0 or args.cube_extent <= 0:
            sys.exit("--cube: N and EXTENT must be positive")
    train_c2w = np.stack([v["c2w"] for v in meta["train"]])
    all_c2w = np.stack([v["c2w"] for v in meta["train"] + meta.get("test", [])])
    if args.no_normalize:
        args.norm_scale, args.norm_centre = 1.0, np.zeros(3)
    else:
        args.norm_scale, args.norm_centre = normalisation(all_c2w, points)
    # simple_trainer: parser.scene_scale * 1.1, the parser's over all its images (train + test).
    scene_scale = 1.1 * camera_spread(all_c2w) * args.norm_scale
    if points is not None:
        points = points.copy()
        points[:, :3] = args.norm_scale * (points[:, :3] - args.norm_centre)

    bg = [float(c) for c in meta.get("background", [0.0, 0.0, 0.0])]
    result = {
        "views": os.path.abspath(args.views), "dataset": meta.get("dataset"),
        "model": os.path.abspath(args.out), "steps": args.steps, "mode": args.mode,
        "strategy": args.strategy,
        "init_note": (f"{args.cube_points} points uniform in [-{args.cube_extent}, "
                      f"{args.cube_extent}]^3 of the export's world (splat's protocol cube)"
                      if args.init == "cube" else args.init),
        "train_views": len(meta["train"]), "test_views": len(meta.get("test", [])),
        "scene_scale": scene_scale / args.norm_scale,
        "scene_scale_note": "gsplat's: 1.1 x max camera distance from the mean, over train + test "
                            "cameras, in the export's units (training uses it x normalize_scale)",
        "scene_scale_train_only": 1.1 * camera_spread(train_c2w),
        "views_scene_extent": meta.get("scene_extent"),
        "normalize_scale": args.norm_scale, "normalize_centre": list(map(float, args.norm_centre)),
        "background": bg, "torch_version": torch.__version__,
        "settings": {k: getattr(args, k) for k in (
            "strategy", "mode", "steps", "cap", "init", "cube", "seed", "init_num_pts", "init_extent", "init_opa",
            "init_scale", "sh_degree", "sh_degree_interval", "ssim_lambda", "opacity_reg",
            "scale_reg", "near_plane", "far_plane", "means_lr", "scales_lr", "opacities_lr",
            "quats_lr", "sh0_lr", "shN_lr")},
    }
    result["settings"].update({"batch_size": 1, "adam_eps": 1e-15, "packed": False,
                               "rasterize_mode": "classic", "normalize_world": not args.no_normalize,
                               "means_lr_decay": "exponential to 0.01x over steps"})
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    gen = torch.Generator().manual_seed(args.seed)
    splats = init_splats(args, points, scene_scale, args.sh_degree, device, gen)
    result["init_splats"] = len(splats["means"])
    print(f"{len(meta['train'])} train views, {result['test_views']} test views, "
          f"init {args.init}: {result['init_splats']} splats, scene scale {result['scene_scale']:.4g} "
          f"(views.json scene_extent {result['views_scene_extent']})", flush=True)

    if args.init_only:
        result["steps"] = 0
    else:
        if device.type != "cuda" and not args.allow_cpu:
            sys.exit("training needs CUDA (use --init-only to test without it)")
        splats = train(args, meta, splats, scene_scale, bg, result, device)
    written, dropped = write_ply(args.out, splats, args.norm_centre, args.norm_scale)
    result["num_splats"], result["dropped_nonfinite"] = written, dropped
    if not args.init_only:
        print(f"gsplat {result['gsplat_version']} {args.strategy}: {args.steps} steps in "
              f"{result['train_seconds']:.2f} s, {written} splats, ssim {result['ssim']}")
    print(f"wrote {args.out} ({written} splats{f', {dropped} non-finite dropped' if dropped else ''})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
