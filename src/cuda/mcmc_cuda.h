#pragma once
// MCMC densification on the GPU (Kheradmand et al. 2024), mirroring cpu/mcmc_cpu.h: the position
// noise and the refine tick (relocate dead splats, append copies; Adam adds the regularizers'
// gradients, cuda/adam_cuda.h). The random numbers are the counter draws of engine/mcmc.h, so both
// backends sample the same splats.
//
// A refine tick is three calls around the caller's one host wait:
//   mcmc_find_dead   partition the splats into dead (index order) and alive; the dead count is
//                    copied to pinned host memory
//   <host wait>      the caller's named sync, then it reads the count
//   mcmc_relocate    dead slots take corrected copies of live splats sampled by opacity
//   mcmc_grow        copies of splats sampled by opacity are appended after the live ones
#include <cstddef>
#include <cstdint>

#include "cuda/arena.h"
#include "cuda/types.h"
#include "engine/backend.h"  // McmcRefineSettings

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

// The model's slot arrays: five groups in Gaussians::for_each_group order, each [slots, width].
struct McmcSlots {
  float* params[5];
  float* m[5];  // Adam first moments
  float* v[5];  // Adam second moments
  int width[5];
};

struct McmcSize {
  int n = 0;      // splats before the tick
  int draws = 0;  // most draws of one phase: max(dead, added)
};

// Scratch of one tick, carved from one allocation (cuda/arena.h).
struct McmcScratch {
  // Dead indices ascending at the front, alive indices descending at the back (CUB partition):
  // the k-th alive splat is partition[n - 1 - k].
  std::uint32_t* partition;  // [n]
  std::int32_t* dead_count;  // [1]
  double* cdf;               // [n] inclusive prefix sums of the sampling weights
  std::int32_t* times;       // [n] draws that picked each splat
  std::uint32_t* sources;    // [draws] the splat each draw picked
  void* temp;                // CUB scratch
  std::size_t temp_bytes;
  void carve(Carver& c, const McmcSize& size);
};

// Partitions n splats into dead (sigmoid(raw) <= min_opacity) and alive, and queues the copy of
// the dead count into dead_count_host (pinned, [1]); it is valid after a host wait on stream.
void mcmc_find_dead(int n,
                    const float* raw_opacity,
                    float min_opacity,
                    const McmcScratch& s,
                    std::int32_t* dead_count_host,
                    cudaStream_t stream);

// Relocation, 0 < dead < n, after mcmc_find_dead: draw j (uniform01(tick.seed, kRelocate, j))
// picks a live splat by opacity; every picked splat gets the mcmc::relocate correction (with
// tick.min_opacity) for (times picked + 1) copies and zero Adam moments, and the j-th dead slot
// becomes a copy of it with zero moments. tick.target_count is not read.
void mcmc_relocate(const McmcSlots& slots,
                   int n,
                   int dead,
                   const McmcRefineSettings& tick,
                   const McmcScratch& s,
                   cudaStream_t stream);

// Growth, add > 0: the arrays hold n + add slots. Draw j (stream kAdd) picks one of the n splats
// by opacity (double weights, as the CPU); picked splats are corrected as above and slot n + j
// becomes a copy with zero moments.
void mcmc_grow(const McmcSlots& slots,
               int n,
               int add,
               const McmcRefineSettings& tick,
               const McmcScratch& s,
               cudaStream_t stream);

}  // namespace splat::cuda
