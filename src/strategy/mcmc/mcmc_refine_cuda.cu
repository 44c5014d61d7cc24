// MCMC refine-tick kernels (Kheradmand et al. 2024), mirroring the CPU tick (mcmc_tick_cpu.cpp)
// step for step.
//
// Parity with the CPU reference rests on three choices:
//  - float sigmoid as glibc computes it: the exponential in double rounded to float is the
//    correctly rounded expf that glibc returns, so the dead test `o <= min_opacity` and the
//    relocation weights agree bit for bit (CUDA's expf may be off by an ulp);
//  - the sampling CDFs in double, as the CPU's: a draw can then only pick another splat than the
//    CPU when u * total lands within rounding (~1e-16 relative) of a CDF boundary;
//  - the same counter draws (engine/mcmc.h) and the same order of draws and slots.
// Sources are corrected in place by a per-splat kernel before the copies are written, as
// cpu::correct_sources runs before cpu::copy_slot: a source is never a destination in the same
// phase (relocation copies alive -> dead, growth copies [0, n) -> [n, n + add)), so the copy kernel
// reads only slots nobody writes in that launch, and each corrected source has exactly one writer.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_scan.cuh>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/launch.h"
#include "cuda/project_math.cuh"
#include "engine/mcmc.h"
#include "strategy/mcmc/mcmc_refine_cuda.h"

namespace splat::config {
inline constexpr int mcmc_refine_block_size = 256;
}  // namespace splat::config

namespace splat::cuda {
namespace {

constexpr int kThreads = config::mcmc_refine_block_size;

using detail::sigmoid_f;

// ---- Refine tick --------------------------------------------------------------------------------

struct IsDead {
  const float* raw_opacity;  // [N]
  float min_opacity;
  __device__ bool operator()(std::uint32_t i) const {
    return sigmoid_f(raw_opacity[i]) <= min_opacity;
  }
};

__device__ double weight_of(std::uint32_t i, double opacity, const McmcGrads& grads) {
  return grads.power > 0.0f
             ? mcmc::sample_weight(opacity, grads.grad2d[i], grads.count[i], grads.power)
             : opacity;
}

// Relocation weights of the alive splats in index order (cdf[k] of the k-th alive), from the
// float opacity as the CPU's alive_weight, before the in-place scan turns them into the CDF.
__global__ void alive_weights_kernel(int n,
                                     int alive,
                                     const std::uint32_t* __restrict__ partition,  // [N]
                                     const float* __restrict__ raw_opacity,        // [N]
                                     McmcGrads grads,
                                     double* __restrict__ cdf) {  // [alive]
  const int k = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= alive) return;
  const std::uint32_t i = partition[n - 1 - k];
  cdf[k] = weight_of(i, double(sigmoid_f(raw_opacity[i])), grads);
}

// Growth weights over all splats, from the sigmoid in double as the CPU's growth pass.
__global__ void all_weights_kernel(int n,
                                   const float* __restrict__ raw_opacity,  // [N]
                                   McmcGrads grads,
                                   double* __restrict__ cdf) {  // [N]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  cdf[i] = weight_of(std::uint32_t(i), 1.0 / (1.0 + exp(-double(raw_opacity[i]))), grads);
}

// Inverse-CDF sampling (cpu::sample_by_weight): draw j takes the first rank whose inclusive prefix
// sum exceeds u_j * total (std::upper_bound), clamped to the last rank.
__global__ void sample_kernel(int draws,
                              int ranks,
                              const double* __restrict__ cdf,  // [ranks]
                              std::uint64_t seed,
                              std::uint64_t stream,
                              const std::uint32_t* __restrict__ partition,  // [N] or null
                              int n,                                        // partition size
                              std::uint32_t* __restrict__ sources,          // [draws]
                              std::int32_t* __restrict__ times) {           // [N]
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= draws) return;
  const double u = double(mcmc::uniform01(seed, stream, std::uint64_t(j))) * cdf[ranks - 1];
  int lo = 0, hi = ranks;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (cdf[mid] > u)
      hi = mid;
    else
      lo = mid + 1;
  }
  const int rank = min(lo, ranks - 1);
  // Relocation ranks the alive splats (stored descending at the back of the partition).
  const std::uint32_t src = partition ? partition[n - 1 - rank] : std::uint32_t(rank);
  sources[j] = src;
  atomicAdd(&times[src], 1);
}

// cpu::correct_sources: every picked splat becomes one of (times + 1) splats that together
// render like the original (mcmc::relocate, paper eq. 9), and restarts Adam from zero.
// One thread per splat, so each source has exactly one reader-writer.
__global__ void correct_sources_kernel(int n,
                                       float min_opacity,
                                       const std::int32_t* __restrict__ times,  // [N]
                                       ModelSlots slots) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const int t = times[i];
  if (t == 0) return;
  float* raw = slots.params[3];
  float* log_scales = slots.params[1];
  const mcmc::Relocated r = mcmc::relocate(sigmoid_f(raw[i]), t + 1);
  // std::clamp(r.opacity, min_opacity, 1 - 1e-6), NaN passing through as there.
  constexpr float kMaxOpacity = 1.0f - 1e-6f;
  const float o =
      r.opacity < min_opacity ? min_opacity : (kMaxOpacity < r.opacity ? kMaxOpacity : r.opacity);
  raw[i] = logf(o / (1.0f - o));
  const float d_log_scale = logf(r.scale_factor);
  for (int k = 0; k < 3; ++k) log_scales[std::size_t(i) * 3 + k] += d_log_scale;
  for (int g = 0; g < 5; ++g) {
    const int w = slots.width[g];
    for (int e = 0; e < w; ++e)
      slots.m[g][std::size_t(i) * w + e] = slots.v[g][std::size_t(i) * w + e] = 0.0f;
  }
}

// cpu::copy_slot for every draw: slot dst(j) takes the (corrected) parameters of sources[j] and
// zero moments. One thread per (draw, float of the slot), so a warp moves contiguous floats.
__global__ void copy_slots_kernel(std::size_t total,  // draws * slot floats
                                  int slot_floats,
                                  const std::uint32_t* __restrict__ sources,   // [draws]
                                  const std::uint32_t* __restrict__ dst_list,  // [draws] or null
                                  std::uint32_t dst_base,  // dst = base + j if no list
                                  ModelSlots slots) {
  const std::size_t f = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (f >= total) return;
  const std::size_t j = f / std::size_t(slot_floats);
  int e = int(f - j * std::size_t(slot_floats));
  int g = 0;
  while (e >= slots.width[g]) e -= slots.width[g++];  // five groups at most
  const std::size_t w = std::size_t(slots.width[g]);
  const std::size_t src = sources[j];
  const std::size_t dst = dst_list ? std::size_t(dst_list[j]) : std::size_t(dst_base) + j;
  slots.params[g][dst * w + e] = slots.params[g][src * w + e];
  slots.m[g][dst * w + e] = 0.0f;
  slots.v[g][dst * w + e] = 0.0f;
}

std::size_t partition_temp_bytes(int n) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(
      cub::DevicePartition::If(nullptr, bytes, thrust::counting_iterator<std::uint32_t>(0),
                               static_cast<std::uint32_t*>(nullptr),
                               static_cast<std::int32_t*>(nullptr), n, IsDead{nullptr, 0.0f}));
  return bytes;
}

std::size_t cdf_temp_bytes(int n) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<double*>(nullptr), n));
  return bytes;
}

// Samples `draws` sources among `ranks` weights already in s.cdf (scanned here), counts them and
// corrects them in place, then writes the copies.
void sample_correct_copy(const ModelSlots& slots,
                         int n,
                         int ranks,
                         int draws,
                         std::uint64_t seed,
                         std::uint64_t rng_stream,
                         const std::uint32_t* rank_partition,
                         const std::uint32_t* dst_list,
                         std::uint32_t dst_base,
                         float min_opacity,
                         const McmcScratch& s,
                         cudaStream_t stream) {
  std::size_t temp_bytes = s.temp_bytes;
  SPLAT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(s.temp, temp_bytes, s.cdf, ranks, stream));
  SPLAT_CUDA_CHECK(cudaMemsetAsync(s.times, 0, std::size_t(n) * sizeof(std::int32_t), stream));
  sample_kernel<<<blocks_for(std::size_t(draws), kThreads), kThreads, 0, stream>>>(
      draws, ranks, s.cdf, seed, rng_stream, rank_partition, n, s.sources, s.times);
  SPLAT_CUDA_CHECK_LAUNCH("mcmc_sample");
  correct_sources_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, min_opacity, s.times, slots);
  SPLAT_CUDA_CHECK_LAUNCH("mcmc_correct_sources");
  int slot_floats = 0;
  for (int w : slots.width) slot_floats += w;
  const std::size_t total = std::size_t(draws) * std::size_t(slot_floats);
  copy_slots_kernel<<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
      total, slot_floats, s.sources, dst_list, dst_base, slots);
  SPLAT_CUDA_CHECK_LAUNCH("mcmc_copy_slots");
}

void check_slots(const ModelSlots& slots, const char* who) {
  for (int g = 0; g < 5; ++g)
    if (slots.width[g] <= 0 || !slots.params[g] || !slots.m[g] || !slots.v[g])
      throw Error(std::string(who) + ": parameter group " + std::to_string(g) + " has width " +
                  std::to_string(slots.width[g]) + " or a null array");
}

}  // namespace

void McmcScratch::carve(Carver& c, const McmcSize& size) {
  const std::size_t n = std::size_t(std::max(size.n, 0));
  partition = c.take<std::uint32_t>(n);
  dead_count = c.take<std::int32_t>(1);
  cdf = c.take<double>(n);
  times = c.take<std::int32_t>(n);
  sources = c.take<std::uint32_t>(std::size_t(std::max(size.draws, 0)));
  temp_bytes = std::max(partition_temp_bytes(int(n)), cdf_temp_bytes(int(n)));
  temp = c.take<char>(temp_bytes);
}

void mcmc_find_dead(int n,
                    const float* raw_opacity,
                    float min_opacity,
                    const McmcScratch& s,
                    std::int32_t* dead_count_host,
                    cudaStream_t stream) {
  if (n <= 0) {
    *dead_count_host = 0;
    return;
  }
  std::size_t temp_bytes = s.temp_bytes;
  SPLAT_CUDA_CHECK(cub::DevicePartition::If(
      s.temp, temp_bytes, thrust::counting_iterator<std::uint32_t>(0), s.partition, s.dead_count, n,
      IsDead{raw_opacity, min_opacity}, stream));
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(dead_count_host, s.dead_count, sizeof(std::int32_t),
                                   cudaMemcpyDeviceToHost, stream));
}

void mcmc_relocate(const ModelSlots& slots,
                   int n,
                   int dead,
                   const McmcRefineSettings& tick,
                   const McmcGrads& grads,
                   const McmcScratch& s,
                   cudaStream_t stream) {
  if (dead <= 0 || dead >= n) return;  // nothing dead, or nothing alive to copy
  check_slots(slots, "mcmc_relocate");
  const int alive = n - dead;
  alive_weights_kernel<<<blocks_for(std::size_t(alive), kThreads), kThreads, 0, stream>>>(
      n, alive, s.partition, slots.params[3], grads, s.cdf);
  SPLAT_CUDA_CHECK_LAUNCH("mcmc_alive_weights");
  // Dead slots are the front of the partition, in index order: draw j fills the j-th.
  sample_correct_copy(slots, n, alive, dead, tick.seed, mcmc::kRelocate, s.partition, s.partition,
                      0, tick.min_opacity, s, stream);
}

void mcmc_grow(const ModelSlots& slots,
               int n,
               int add,
               const McmcRefineSettings& tick,
               const McmcGrads& grads,
               const McmcScratch& s,
               cudaStream_t stream) {
  if (add <= 0 || n <= 0) return;
  check_slots(slots, "mcmc_grow");
  all_weights_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, slots.params[3], grads, s.cdf);
  SPLAT_CUDA_CHECK_LAUNCH("mcmc_all_weights");
  sample_correct_copy(slots, n, n, add, tick.seed, mcmc::kAdd, nullptr, nullptr, std::uint32_t(n),
                      tick.min_opacity, s, stream);
}

}  // namespace splat::cuda
