// ADC refine-tick kernels (3DGS adaptive density control), mirroring the CPU tick
// (adc_tick_cpu.cpp) step for step.
//
// Parity with the CPU reference rests on:
//  - the decisions of engine/adc.h on the same floats (thresholds precomputed on the host, no
//    device math function in a comparison), so clone/split/prune sets are identical;
//  - the same destination order, built by one exclusive scan instead of the CPU's append loops
//    (adc_refine_cuda.h: AdcScratch);
//  - plain copies for everything but the split children's means, which use the same counter
//    draws and differ from the CPU only by the device's logf/cosf/sqrtf ulps.
// The compaction is out of place: a kept splat's destination is usually another splat's source.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cub/device/device_scan.cuh>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/launch.h"
#include "strategy/adc/adc_refine_cuda.h"

namespace splat::config {
inline constexpr int adc_refine_block_size = 256;
}  // namespace splat::config

namespace splat::cuda {
namespace {

constexpr int kThreads = config::adc_refine_block_size;
static_assert(kThreads % 32 == 0, "the decision kernel aggregates counts per full warp");

// Flags of the three segments (adc_refine_cuda.h) and the clone/split decision counts. No early
// return: every lane of a warp takes part in the ballots, so the counts cost one atomic per warp.
__global__ void decide_kernel(int n,
                              const float* __restrict__ log_scales,    // [N, 3]
                              const float* __restrict__ raw_opacity,   // [N]
                              const float* __restrict__ grad2d,        // [N]
                              const std::int32_t* __restrict__ count,  // [N]
                              adc::Thresholds t,
                              std::int32_t* __restrict__ flags,     // [3 N]
                              std::int32_t* __restrict__ totals) {  // [kAdcTotals]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  bool clone = false, split = false;
  if (i < n) {
    const adc::Decision d =
        adc::decide(grad2d[i], count[i], adc::max_log_scale(&log_scales[std::size_t(i) * 3]),
                    raw_opacity[i], t);
    clone = d.action == adc::Action::Clone;
    split = d.action == adc::Action::Split;
    const std::size_t un = std::size_t(n), ui = std::size_t(i);
    flags[ui] = !split && !d.prune_self;
    flags[un + ui] = clone && !d.prune_self;
    flags[2 * un + ui] = split && !d.prune_children;
  }
  const unsigned clones = __ballot_sync(0xffffffffu, clone),
                 splits = __ballot_sync(0xffffffffu, split);
  if ((threadIdx.x & 31) == 0) {
    if (clones) atomicAdd(&totals[kAdcCloned], __popc(clones));
    if (splits) atomicAdd(&totals[kAdcSplit], __popc(splits));
  }
}

// Survivor totals per segment from the exclusive scan: a segment's sum is the difference of the
// offsets at its ends (the last one adds its last flag).
__global__ void totals_kernel(int n,
                              const std::int32_t* __restrict__ flags,    // [3 N]
                              const std::int32_t* __restrict__ offsets,  // [3 N]
                              std::int32_t* __restrict__ totals) {       // [kAdcTotals]
  const std::size_t un = std::size_t(n);
  const std::int32_t end = offsets[3 * un - 1] + flags[3 * un - 1];
  totals[kAdcKept] = offsets[un];
  totals[kAdcClones] = offsets[2 * un] - offsets[un];
  totals[kAdcChildren] = end - offsets[2 * un];
}

// Every float of every source slot goes to each of its destinations. One thread per (source,
// float), so a warp moves contiguous floats; each destination float has exactly one writer
// because the scan maps survivors one to one onto [0, kept + clones + 2 children).
__global__ void compact_kernel(std::size_t total,  // N * slot floats
                               int slot_floats,
                               int n,
                               int children,
                               const std::int32_t* __restrict__ flags,    // [3 N]
                               const std::int32_t* __restrict__ offsets,  // [3 N]
                               ModelSlots src,
                               ModelSlots dst) {
  const std::size_t f = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (f >= total) return;
  const std::size_t j = f / std::size_t(slot_floats);
  int e = int(f - j * std::size_t(slot_floats));
  int g = 0;
  while (e >= src.width[g]) e -= src.width[g++];  // five groups at most
  const std::size_t w = std::size_t(src.width[g]), un = std::size_t(n);
  const std::size_t from = j * w + std::size_t(e);
  const float p = src.params[g][from];
  if (flags[j]) {  // kept: Adam state moves with the splat
    const std::size_t to = std::size_t(offsets[j]) * w + std::size_t(e);
    dst.params[g][to] = p;
    dst.m[g][to] = src.m[g][from];
    dst.v[g][to] = src.v[g][from];
  }
  if (flags[un + j]) {  // clone: same parameters, fresh Adam state
    const std::size_t to = std::size_t(offsets[un + j]) * w + std::size_t(e);
    dst.params[g][to] = p;
    dst.m[g][to] = dst.v[g][to] = 0.0f;
  }
  if (flags[2 * un + j]) {  // split children: means and log-scales come from split_kernel
    const std::size_t first = std::size_t(offsets[2 * un + j]);
    for (int c = 0; c < adc::config::split_children; ++c) {
      const std::size_t to = (first + std::size_t(c) * std::size_t(children)) * w + std::size_t(e);
      if (g > 1) dst.params[g][to] = p;
      dst.m[g][to] = dst.v[g][to] = 0.0f;
    }
  }
}

// Means and log-scales of the split children, one thread per parent (cpu::adc_refine's last loop).
__global__ void split_kernel(int n,
                             int children,
                             std::uint64_t seed,
                             const std::int32_t* __restrict__ flags,    // [3 N]
                             const std::int32_t* __restrict__ offsets,  // [3 N]
                             ModelSlots src,
                             ModelSlots dst) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= n) return;
  const std::size_t un = std::size_t(n), uj = std::size_t(j);
  if (!flags[2 * un + uj]) return;
  const float* mean = &src.params[0][uj * 3];
  const float* log_scale = &src.params[1][uj * 3];
  const float* quat = &src.params[2][uj * 4];
  const std::size_t first = std::size_t(offsets[2 * un + uj]);
  for (int c = 0; c < adc::config::split_children; ++c) {
    const std::size_t to = first + std::size_t(c) * std::size_t(children);
    float offset[3];
    adc::split_offset(log_scale, quat, seed, uj, c, offset);
    for (int k = 0; k < 3; ++k) {
      dst.params[0][to * 3 + k] = mean[k] + offset[k];
      dst.params[1][to * 3 + k] = adc::child_log_scale(log_scale[k]);
    }
  }
}

__global__ void reset_opacity_kernel(int n,
                                     float max_raw,
                                     float* __restrict__ raw_opacity,  // [N]
                                     float* __restrict__ m_opacity,    // [N]
                                     float* __restrict__ v_opacity) {  // [N]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const float raw = raw_opacity[i];
  raw_opacity[i] = raw > max_raw ? max_raw : raw;  // cpu::adc_reset_opacity's comparison
  m_opacity[i] = 0.0f;
  v_opacity[i] = 0.0f;
}

std::size_t scan_temp_bytes(int items) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes,
                                                 static_cast<std::int32_t*>(nullptr),
                                                 static_cast<std::int32_t*>(nullptr), items));
  return bytes;
}

void check_slots(const ModelSlots& slots, const char* who) {
  for (int g = 0; g < 5; ++g)
    if (slots.width[g] <= 0 || !slots.params[g] || !slots.m[g] || !slots.v[g])
      throw Error(std::string(who) + ": parameter group " + std::to_string(g) + " has width " +
                  std::to_string(slots.width[g]) + " or a null array");
  if (slots.width[0] != 3 || slots.width[1] != 3 || slots.width[2] != 4 || slots.width[3] != 1)
    throw Error(std::string(who) +
                ": the first four groups must be means, log_scales, quats, raw_opacity");
}

void check_count(int n, const char* who) {
  if (n < 1 || n > INT_MAX / 3)
    throw Error(std::string(who) + ": " + std::to_string(n) +
                " splats is outside [1, INT_MAX / 3]");
}

}  // namespace

void AdcScratch::carve(Carver& c, int n) {
  const std::size_t items = 3 * std::size_t(std::max(n, 0));
  flags = c.take<std::int32_t>(items);
  offsets = c.take<std::int32_t>(items);
  totals = c.take<std::int32_t>(kAdcTotals);
  temp_bytes = scan_temp_bytes(int(items));
  temp = c.take<char>(temp_bytes);
}

void adc_decide(int n,
                GaussianPtrs in,
                const AdcStatsPtrs& stats,
                const adc::Thresholds& t,
                const AdcScratch& s,
                std::int32_t* totals_host,
                cudaStream_t stream) {
  check_count(n, "adc_decide");
  SPLAT_CUDA_CHECK(cudaMemsetAsync(s.totals, 0, kAdcTotals * sizeof(std::int32_t), stream));
  decide_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, in.log_scales, in.raw_opacity, stats.grad2d, stats.count, t, s.flags, s.totals);
  SPLAT_CUDA_CHECK_LAUNCH("adc_decide");
  adc_scan(n, s, totals_host, stream);
}

void adc_scan(int n, const AdcScratch& s, std::int32_t* totals_host, cudaStream_t stream) {
  std::size_t temp_bytes = s.temp_bytes;
  SPLAT_CUDA_CHECK(
      cub::DeviceScan::ExclusiveSum(s.temp, temp_bytes, s.flags, s.offsets, 3 * n, stream));
  totals_kernel<<<1, 1, 0, stream>>>(n, s.flags, s.offsets, s.totals);
  SPLAT_CUDA_CHECK_LAUNCH("adc_totals");
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(totals_host, s.totals, kAdcTotals * sizeof(std::int32_t),
                                   cudaMemcpyDeviceToHost, stream));
}

void adc_compact(const ModelSlots& src,
                 const ModelSlots& dst,
                 int n,
                 int children,
                 std::uint64_t seed,
                 const AdcScratch& s,
                 cudaStream_t stream) {
  check_count(n, "adc_compact");
  check_slots(src, "adc_compact");
  for (int g = 0; g < 5; ++g)
    if (dst.width[g] != src.width[g])
      throw Error("adc_compact: source and destination groups differ");
  int slot_floats = 0;
  for (int g = 0; g < 5; ++g) slot_floats += src.width[g];
  const std::size_t total = std::size_t(n) * std::size_t(slot_floats);
  compact_kernel<<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
      total, slot_floats, n, children, s.flags, s.offsets, src, dst);
  SPLAT_CUDA_CHECK_LAUNCH("adc_compact");
  if (children > 0) {
    split_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
        n, children, seed, s.flags, s.offsets, src, dst);
    SPLAT_CUDA_CHECK_LAUNCH("adc_split");
  }
}

void adc_reset_opacity(int n,
                       float max_raw_opacity,
                       float* raw_opacity,
                       float* m_opacity,
                       float* v_opacity,
                       cudaStream_t stream) {
  if (n <= 0) return;
  reset_opacity_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, max_raw_opacity, raw_opacity, m_opacity, v_opacity);
  SPLAT_CUDA_CHECK_LAUNCH("adc_reset_opacity");
}

}  // namespace splat::cuda
