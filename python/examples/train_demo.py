#!/usr/bin/env python3
"""Trains on splat's generated demo scene, renders a test view and saves it as a PNG.

    python3 python/examples/train_demo.py [OUT]      (default: demo_out; about two minutes on two
                                                      CPU cores, seconds on a GPU)
"""
import sys

import splat

out = sys.argv[1] if len(sys.argv) > 1 else "demo_out"


def show(p: splat.TrainProgress) -> None:
    if p.iteration % 500 == 0 or p.iteration == p.total:
        print(f"python: {p.iteration}/{p.total}, loss {p.loss:.4f}, {p.splats} splats", flush=True)


run = splat.demo(out, progress=show)  # generates out/scene, then trains as `splat demo` does
print(f"test PSNR {run.metrics['psnr']:.2f} dB with {len(run.model)} splats")

view = splat.load_dataset(f"{out}/scene").test[0]
image = run.model.render(view.camera)  # [H, W, 3] float32 in [0, 1]
splat.write_png(f"{out}/{view.name}_python.png", image)
print(f"wrote {out}/{view.name}_python.png ({image.shape[1]}x{image.shape[0]})")
