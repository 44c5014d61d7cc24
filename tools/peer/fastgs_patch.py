#!/usr/bin/env python3
"""Patches an unpacked FastGS tree (fetched fastgs/FastGS) in place so that it builds with CUDA 13
and PyTorch 2.x, and times its training loop by the wall clock; each patch must match exactly
once (else this fails, naming it), and a patched tree is left as it is.
  python3 fastgs_patch.py FASTGS_DIR
  * cub::Max() is gone in CUDA 13 (CCCL 3): the block reduce in forward.cu takes a max lambda;
  * Tensor.data<T>() is deprecated (removed in newer PyTorch): data_ptr<T>() in every .cu/.cpp;
  * rasterizer_impl.h uses std::uintptr_t and uint32_t without <cstdint> (newer GCC);
  * the Blender loader hands PIL int8 pixels as "RGB", which Pillow 11 refuses: uint8, the same bytes;
  * train.py: "Train loop wall seconds" (torch.cuda.synchronize() around the loop, the model save
    inside it left out) beside FastGS's own "Training time" (its CUDA-event sum per step), and
    "Peak GPU memory MiB" (torch.cuda.max_memory_allocated over the run, as gsplat_mcmc.py)."""

import os
import re
import sys

root = sys.argv[1] if len(sys.argv) == 2 else sys.exit(__doc__)
stamp = os.path.join(root, ".peer-patched")
if os.path.exists(stamp):
    sys.exit(0)


def patch(rel, old, new):
    path = os.path.join(root, rel)
    with open(path) as f:
        s = f.read()
    if s.count(old) != 1:
        sys.exit(f"fastgs_patch: {rel}: expected one {old!r}, found {s.count(old)}")
    with open(path, "w") as f:
        f.write(s.replace(old, new))


ras = "submodules/diff-gaussian-rasterization_fastgs"
patch(f"{ras}/cuda_rasterizer/forward.cu", "Reduce(last_contributor, cub::Max())",
      "Reduce(last_contributor, [](uint32_t a, uint32_t b) { return a > b ? a : b; })")
patch(f"{ras}/cuda_rasterizer/rasterizer_impl.h", "#include <iostream>\n",
      "#include <cstdint>\n#include <iostream>\n")
patch("scene/dataset_readers.py", "np.array(arr*255.0, dtype=np.byte)", "np.array(arr*255.0, dtype=np.uint8)")
n = 0
for d, _, files in os.walk(os.path.join(root, "submodules")):
    for name in files:
        if name.endswith((".cu", ".cpp", ".h")) and "third_party" not in d:
            p = os.path.join(d, name)
            with open(p) as f:
                s = f.read()
            t, k = re.subn(r"\.data<(\w+)>\(\)", r".data_ptr<\1>()", s)
            if k:
                with open(p, "w") as f:
                    f.write(t)
                n += k
print(f"fastgs_patch: {n} data<T>() -> data_ptr<T>()")

patch("train.py", "    for iteration in range(first_iter, opt.iterations + 1):\n",
      "    torch.cuda.synchronize(); _peer_t0 = time.perf_counter(); _peer_save = 0.0\n"
      "    for iteration in range(first_iter, opt.iterations + 1):\n")
patch("train.py", "                scene.save(iteration)\n",
      "                _peer_ts = time.perf_counter(); scene.save(iteration)\n"
      "                _peer_save += time.perf_counter() - _peer_ts\n")
patch("train.py", "    # scene.save(iteration)\n",
      "    torch.cuda.synchronize()\n"
      "    print(f\"Train loop wall seconds: {time.perf_counter() - _peer_t0 - _peer_save}\")\n"
      "    print(f\"Peak GPU memory MiB: {torch.cuda.max_memory_allocated() / 2**20}\")\n"
      "    # scene.save(iteration)\n")
open(stamp, "w").close()
