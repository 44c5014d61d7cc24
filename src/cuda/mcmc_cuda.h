#pragma once
// MCMC's position noise on the GPU (Kheradmand et al. 2024), mirroring cpu/mcmc_cpu.h (Adam adds
// the regularizers' gradients, cuda/adam_cuda.h; the refine tick is the strategy's,
// strategy/mcmc/). The random numbers are the counter draws of engine/mcmc.h, as on the CPU.
#include <cstddef>
#include <cstdint>

#include "cuda/types.h"

namespace splat::cuda {

// The noise of one step; a replayed CUDA graph reads it from a device copy.
struct NoiseScalars {
  float scale = 0;
  std::uint64_t seed = 0;
};
// One step's noise as mcmc_inject_noise reads it (the pattern of ShAdam, cuda/project_cuda.h): with
// `device_scalars`, the kernel reads the scalars there instead of `scalars`; with `abort` pointing
// at a nonzero device int (an abandoned step), it does nothing.
struct NoiseStep {
  NoiseScalars scalars;
  const NoiseScalars* device_scalars = nullptr;
  const int* abort = nullptr;
};
// means [N, 3] += scale * gate(opacity) * R S^2 R^T z, z from mcmc::normal(seed, kNoise,
// 3 i + axis), with the log-scales, quaternions and raw opacities of `in` (in.means is not read:
// `means` is the array that moves).
void mcmc_inject_noise(
    int n, GaussianPtrs in, float* means, const NoiseStep& noise, cudaStream_t stream);

}  // namespace splat::cuda
