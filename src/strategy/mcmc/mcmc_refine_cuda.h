#pragma once
// MCMC's refine tick on the GPU (Kheradmand et al. 2024), mirroring the CPU tick
// (mcmc_tick_cpu.h): relocate dead splats, append copies. The random numbers are the counter draws
// of engine/mcmc.h, so both backends sample the same splats.
//
// A refine tick is three calls around the caller's one host wait:
//   mcmc_find_dead   partition the splats into dead (index order) and alive; the dead count is
//                    copied to pinned host memory
//   <host wait>      the caller's named sync, then it reads the count
//   mcmc_relocate    dead slots take corrected copies of live splats sampled by opacity
//   mcmc_grow        copies of splats sampled by opacity are appended after the live ones
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/arena.h"
#include "cuda/device_model.h"  // ModelSlots
#include "strategy/mcmc/mcmc_strategy.h"

namespace splat::cuda {

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

// What weighs the draws besides opacity (mcmc::sample_weight): ADC's statistics of the n splats
// and the power; power 0 (null arrays): opacity alone.
struct McmcGrads {
  const float* grad2d = nullptr;        // [n] sums of the screen-space gradient norm
  const std::int32_t* count = nullptr;  // [n] visible steps
  float power = 0.0f;
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
// picks a live splat by weight (opacity, or mcmc::sample_weight with grads); every picked splat
// gets the mcmc::relocate correction (with tick.min_opacity) for (times picked + 1) copies and zero
// Adam moments, and the j-th dead slot becomes a copy of it with zero moments. tick.target_count is
// not read.
void mcmc_relocate(const ModelSlots& slots,
                   int n,
                   int dead,
                   const McmcRefineSettings& tick,
                   const McmcGrads& grads,
                   const McmcScratch& s,
                   cudaStream_t stream);

// Growth, add > 0: the arrays hold n + add slots. Draw j (stream kAdd) picks one of the n splats
// by weight (double, as the CPU); picked splats are corrected as above and slot n + j
// becomes a copy with zero moments.
void mcmc_grow(const ModelSlots& slots,
               int n,
               int add,
               const McmcRefineSettings& tick,
               const McmcGrads& grads,
               const McmcScratch& s,
               cudaStream_t stream);

}  // namespace splat::cuda
