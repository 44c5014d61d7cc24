#!/usr/bin/env python3
"""Scores a trained FastGS model on its held-out views as FastGS's render.py + metrics.py do:
its renderer (render_fastgs with --mult, alpha clamp 0.99), render and ground truth rounded to
8 bits as render.py's PNGs are, then its utils.image_utils.psnr and utils.loss_utils.ssim;
LPIPS (lpipsPyTorch, vgg) where its pretrained weights load (the GPU machine has no network: else
null). Run from the FastGS directory:
  python3 fastgs_score.py -m MODEL [--mult 0.5] --json OUT.json   (source, -w, sh degree: cfg_args)"""

import json
import sys
from argparse import ArgumentParser

import torch

sys.path.insert(0, ".")
from arguments import ModelParams, PipelineParams, get_combined_args  # noqa: E402
from gaussian_renderer import render_fastgs  # noqa: E402
from scene import GaussianModel, Scene  # noqa: E402
from utils.image_utils import psnr  # noqa: E402
from utils.loss_utils import ssim  # noqa: E402


def as_png(x):
    """torchvision.utils.save_image's rounding, read back as metrics.py reads it."""
    return x.mul(255).add_(0.5).clamp_(0, 255).to(torch.uint8).float() / 255.0


def main():
    parser = ArgumentParser()
    lp, pp = ModelParams(parser, sentinel=True), PipelineParams(parser)
    parser.add_argument("--mult", type=float, default=0.5)
    parser.add_argument("--json", required=True)
    args = get_combined_args(parser)  # as render.py: the training's cfg_args, then these
    dataset, pipe = lp.extract(args), pp.extract(args)
    dataset.eval = True
    with torch.no_grad():
        gaussians = GaussianModel(dataset.sh_degree)
        scene = Scene(dataset, gaussians, load_iteration=-1, shuffle=False)
        bg = torch.tensor([1, 1, 1] if dataset.white_background else [0, 0, 0],
                          dtype=torch.float32, device="cuda")
        try:
            from lpipsPyTorch import lpips

            lpips_fn, note = lpips, "lpipsPyTorch vgg (metrics.py)"
        except Exception as e:
            lpips_fn, note = None, f"unavailable: {type(e).__name__}: {e}"[:200]
        m = {"psnr": [], "ssim": [], "lpips": []}
        for view in scene.getTestCameras():
            img = as_png(render_fastgs(view, gaussians, pipe, bg, args.mult)["render"])[None]
            gt = as_png(view.original_image[0:3].cuda())[None]
            m["psnr"].append(float(psnr(img, gt).mean()))
            m["ssim"].append(float(ssim(img, gt)))
            if lpips_fn is not None:
                try:
                    m["lpips"].append(float(lpips_fn(img, gt, net_type="vgg")))
                except Exception as e:  # its weights are downloaded on first use
                    lpips_fn, note = None, f"unavailable: {type(e).__name__}: {e}"[:200]
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    r = {"psnr": mean(m["psnr"]), "ssim": mean(m["ssim"]),
         "lpips": mean(m["lpips"]) if lpips_fn is not None else None, "lpips_note": note,
         "views": len(m["psnr"]), "iteration": scene.loaded_iter,
         "num_splats": int(gaussians.get_xyz.shape[0]), "mult": args.mult, "alpha_max": 0.99,
         "scorer": "FastGS render_fastgs + utils psnr/ssim on 8-bit renders (render.py, metrics.py)"}
    with open(args.json, "w") as f:
        json.dump(r, f, indent=2)
    print(f"FastGS's own scorer: {r['views']} views, PSNR {r['psnr']:.3f}, SSIM {r['ssim']:.4f}, "
          f"LPIPS {r['lpips']}")


if __name__ == "__main__":
    main()
