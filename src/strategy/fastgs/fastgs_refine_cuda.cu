// FastGS tick kernels (fastgs_refine_cuda.h), mirroring fastgs_tick_cpu.cpp step for step.
//
// Parity with the CPU reference rests on:
//  - the same float expressions (fastgs.h's functions, explicit _rn roundings where the device
//    could contract a multiply and an add), so masks, decisions and keys are the CPU's;
//  - order-free reductions: min/max through order-preserving integer bits, counts as integer
//    atomics, S accumulated per splat in view order;
//  - the count pass walking each pixel's list with the forward's alpha test up to the entry after
//    the last one the forward blended (RasterOut::last), so it emits what the forward blended.
#include <cuda_runtime.h>

#include <climits>
#include <cub/device/device_radix_sort.cuh>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/launch.h"
#include "cuda/rasterize_common.cuh"
#include "strategy/fastgs/fastgs_refine_cuda.h"

namespace splat::cuda {
namespace {

constexpr int kThreads = 256;

// A decision in one byte: the action (adc::Action) in the low bits, then the prune flags.
constexpr std::uint8_t kPruneSelf = 4, kPruneChildren = 8, kActionBits = 3;

// Float to unsigned bits that order as the floats do (NaN aside), and back.
__device__ __forceinline__ std::uint32_t ordered(float f) {
  const std::uint32_t b = __float_as_uint(f);
  return b & 0x80000000u ? ~b : b | 0x80000000u;
}
__device__ __forceinline__ float unordered(std::uint32_t b) {
  return __uint_as_float(b & 0x80000000u ? b & 0x7fffffffu : ~b);
}

__global__ void error_range_kernel(std::size_t pixels,
                                   const float* __restrict__ render,  // [P, 3]
                                   const std::uint8_t* __restrict__ target,
                                   TargetFormat f,
                                   float* __restrict__ error,            // [P]
                                   std::uint32_t* __restrict__ range) {  // [2]
  const std::size_t p = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  const std::uint8_t* px = &target[p * std::size_t(f.channels)];
  float sum = 0.0f;
  for (int c = 0; c < 3; ++c)
    sum = __fadd_rn(sum, fabsf(__fsub_rn(render[3 * p + c], target_sample(f, px, c))));
  const float e = __fdiv_rn(sum, 3.0f);
  error[p] = e;
  if (target_weight(f, px) == 0.0f || e != e) return;  // not seen by the loss; NaN: std::min's
  atomicMin(&range[0], ordered(e));
  atomicMax(&range[1], ordered(e));
}

__global__ void mask_kernel(std::size_t pixels,
                            const float* __restrict__ error,  // [P]
                            const std::uint8_t* __restrict__ target,
                            TargetFormat f,
                            float tau,
                            const std::uint32_t* __restrict__ range,  // [2]
                            std::uint8_t* __restrict__ mask) {        // [P]
  const std::size_t p = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  const bool seen = target_weight(f, &target[p * std::size_t(f.channels)]) != 0.0f;
  // An empty range (no pixel seen) leaves lo = +max bits > hi: no pixel is in.
  const float lo = unordered(range[0]), hi = unordered(range[1]);
  mask[p] = seen && range[0] <= range[1] && fastgs::in_error_mask(error[p], lo, hi, tau);
}

// One thread per pixel: the entries of its tile's list before `last`, each counted where the
// forward's alpha test passes (rasterize_fwd_kernel's alpha_at; every such entry was blended).
template <bool kFast>
__global__ void count_kernel(RasterParams p,
                             const std::uint32_t* __restrict__ gaussian_ids,
                             const std::uint32_t* __restrict__ ranges,  // [tiles, 2]
                             const SplatRecord* __restrict__ records,
                             const std::uint32_t* __restrict__ last,  // [H, W]
                             const std::uint8_t* __restrict__ mask,   // [H, W]
                             std::uint32_t* __restrict__ view_count) {
  const int x = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = int(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= p.width || y >= p.height) return;
  const std::size_t pix = std::size_t(y) * std::size_t(p.width) + std::size_t(x);
  if (!mask[pix]) return;
  const std::uint32_t tile =
      std::uint32_t(y / p.grid.side) * std::uint32_t(p.grid.width) + std::uint32_t(x / p.grid.side);
  const float px = float(x) + 0.5f, py = float(y) + 0.5f;
  for (std::uint32_t k = ranges[tile * 2], end = last[pix]; k < end; ++k) {
    const std::uint32_t g = gaussian_ids[k];
    const float4 q = records[g].q, m = records[g].mean;
    const float power = gaussian_power(q, m.x - px, m.y - py);
    const float a = fminf(p.alpha_max, q.w * gaussian_falloff<kFast>(power));
    if (!(power > 0.0f || power < kMinPower) && !(a < config::alpha_min))
      atomicAdd(&view_count[g], 1u);
  }
}

__global__ void add_view_kernel(int n,
                                std::uint32_t area,
                                float loss,
                                const std::uint32_t* __restrict__ view_count,
                                std::uint32_t* __restrict__ count,
                                float* __restrict__ score) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const std::uint32_t c = view_count[i] * area;  // in full-resolution pixels
  count[i] += c;
  score[i] = __fadd_rn(score[i], __fmul_rn(loss, float(c)));
}

__global__ void score_range_kernel(int n,
                                   const float* __restrict__ score,
                                   std::uint32_t* __restrict__ range) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  atomicMin(&range[0], ordered(score[i]));
  atomicMax(&range[1], ordered(score[i]));
}

// Decisions, the decision totals, the candidates on the grown set and the prune keys (kept
// originals eligible), as cpu::fastgs_refine's first loop.
__global__ void decide_kernel(int n,
                              const float* __restrict__ log_scales,     // [N, 3]
                              const float* __restrict__ raw_opacity,    // [N]
                              const float* __restrict__ grad2d,         // [N]
                              const float* __restrict__ grad2d_abs,     // [N]
                              const std::int32_t* __restrict__ vis,     // [N]
                              const std::uint32_t* __restrict__ count,  // [N] C
                              const float* __restrict__ score,          // [N] S
                              const std::uint32_t* __restrict__ score_range,
                              fastgs::Thresholds t,
                              std::uint64_t seed,
                              std::uint8_t* __restrict__ decision,
                              float* __restrict__ keys,
                              std::uint32_t* __restrict__ index,
                              std::int32_t* __restrict__ candidates,
                              std::int32_t* __restrict__ totals) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  bool clone = false, split = false;
  int cand = 0;
  if (i < n) {
    const adc::Decision d =
        fastgs::decide(grad2d[i], grad2d_abs[i], vis[i], count[i],
                       adc::max_log_scale(&log_scales[std::size_t(i) * 3]), raw_opacity[i], t);
    clone = d.action == adc::Action::Clone;
    split = d.action == adc::Action::Split;
    cand = split ? 2 * int(d.prune_children) : clone ? 2 * int(d.prune_self) : int(d.prune_self);
    decision[i] = std::uint8_t(std::uint8_t(d.action) | (d.prune_self ? kPruneSelf : 0) |
                               (d.prune_children ? kPruneChildren : 0));
    const float ps =
        fastgs::normalized(score[i], unordered(score_range[0]), unordered(score_range[1]));
    keys[i] = fastgs::prune_key(seed, std::uint64_t(i), ps, !split);
    index[i] = std::uint32_t(i);
  }
  const unsigned clones = __ballot_sync(0xffffffffu, clone),
                 splits = __ballot_sync(0xffffffffu, split);
  if ((threadIdx.x & 31) == 0) {
    if (clones) atomicAdd(&totals[kAdcCloned], __popc(clones));
    if (splits) atomicAdd(&totals[kAdcSplit], __popc(splits));
  }
  if (cand) atomicAdd(candidates, cand);
}

// One thread per rank of the sorted keys: the first floor(candidates / 2) ranks are drawn (only
// eligible splats have finite keys, so they come first); ADC's three flag segments.
__global__ void flags_kernel(int n,
                             const std::uint32_t* __restrict__ index_sorted,
                             const std::uint8_t* __restrict__ decision,
                             const std::int32_t* __restrict__ candidates,
                             std::int32_t* __restrict__ flags) {  // [3 N]
  const int r = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (r >= n) return;
  const std::uint32_t i = index_sorted[r];
  const std::uint8_t d = decision[i];
  const auto action = adc::Action(d & kActionBits);
  const bool split = action == adc::Action::Split, clone = action == adc::Action::Clone;
  const bool drawn = r < *candidates / 2 && !split;
  const std::size_t un = std::size_t(n);
  flags[i] = !split && !(drawn && (d & kPruneSelf));
  flags[un + i] = clone;      // born in the tick: never drawn
  flags[2 * un + i] = split;  // likewise
}

__global__ void final_flags_kernel(int n,
                                   const float* __restrict__ raw_opacity,
                                   const float* __restrict__ score,
                                   const std::uint32_t* __restrict__ score_range,
                                   float min_raw,
                                   float max_score,
                                   std::int32_t* __restrict__ flags) {  // [3 N]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const float ps =
      fastgs::normalized(score[i], unordered(score_range[0]), unordered(score_range[1]));
  const std::size_t un = std::size_t(n);
  flags[i] = !(raw_opacity[i] < min_raw) && !(ps > max_score);
  flags[un + i] = 0;
  flags[2 * un + i] = 0;
}

std::size_t sort_temp_bytes(int n) {
  std::size_t bytes = 0;
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(
      nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
      static_cast<const std::uint32_t*>(nullptr), static_cast<std::uint32_t*>(nullptr), n));
  return bytes;
}

void check_count(int n, const char* who) {
  if (n < 1 || n > INT_MAX / 3)
    throw Error(std::string(who) + ": " + std::to_string(n) +
                " splats is outside [1, INT_MAX / 3]");
}

// What both ticks' flags start from: S's min and max in s.score_range, zero totals.
void begin_flags(
    int n, const char* who, const FastgsScratch& s, const AdcScratch& adc, cudaStream_t stream) {
  check_count(n, who);
  SPLAT_CUDA_CHECK(cudaMemsetAsync(adc.totals, 0, kAdcTotals * sizeof(std::int32_t), stream));
  const std::uint32_t init[2] = {0xffffffffu, 0u};
  SPLAT_CUDA_CHECK(
      cudaMemcpyAsync(s.score_range, init, sizeof init, cudaMemcpyHostToDevice, stream));
  score_range_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(n, s.score,
                                                                                    s.score_range);
  SPLAT_CUDA_CHECK_LAUNCH("fastgs_score_range");
}

}  // namespace

void FastgsScratch::carve(Carver& c, int n) {
  const std::size_t un = std::size_t(std::max(n, 0));
  count = c.take<std::uint32_t>(un);
  score = c.take<float>(un);
  view_count = c.take<std::uint32_t>(un);
  decision = c.take<std::uint8_t>(un);
  keys = c.take<float>(un);
  keys_sorted = c.take<float>(un);
  index = c.take<std::uint32_t>(un);
  index_sorted = c.take<std::uint32_t>(un);
  score_range = c.take<std::uint32_t>(2);
  candidates = c.take<std::int32_t>(1);
  temp_bytes = sort_temp_bytes(int(un));
  temp = c.take<char>(temp_bytes);
}

void FastgsPixels::carve(Carver& c, std::pair<int, int> wh) {
  const std::size_t px = std::size_t(std::max(wh.first, 0)) * std::size_t(std::max(wh.second, 0));
  mask = c.take<std::uint8_t>(px);
  compensated = c.take<float>(3 * px);
  error = c.take<float>(px);
  error_range = c.take<std::uint32_t>(2);
}

void fastgs_clear_scores(int n, const FastgsScratch& s, cudaStream_t stream) {
  if (n <= 0) return;
  SPLAT_CUDA_CHECK(cudaMemsetAsync(s.count, 0, std::size_t(n) * sizeof(std::uint32_t), stream));
  SPLAT_CUDA_CHECK(cudaMemsetAsync(s.score, 0, std::size_t(n) * sizeof(float), stream));
}

void fastgs_error_mask(int width,
                       int height,
                       const float* render,
                       const std::uint8_t* target,
                       const TargetFormat& format,
                       float tau,
                       const FastgsPixels& px,
                       cudaStream_t stream) {
  const std::size_t pixels = std::size_t(width) * std::size_t(height);
  if (pixels == 0) return;
  const std::uint32_t init[2] = {0xffffffffu, 0u};
  SPLAT_CUDA_CHECK(
      cudaMemcpyAsync(px.error_range, init, sizeof init, cudaMemcpyHostToDevice, stream));
  error_range_kernel<<<blocks_for(pixels, kThreads), kThreads, 0, stream>>>(
      pixels, render, target, format, px.error, px.error_range);
  SPLAT_CUDA_CHECK_LAUNCH("fastgs_error_range");
  mask_kernel<<<blocks_for(pixels, kThreads), kThreads, 0, stream>>>(
      pixels, px.error, target, format, tau, px.error_range, px.mask);
  SPLAT_CUDA_CHECK_LAUNCH("fastgs_error_mask");
}

void fastgs_count_view(const RasterState& fwd,
                       const std::uint8_t* mask,
                       int n,
                       std::uint32_t area,
                       float loss,
                       const FastgsScratch& s,
                       cudaStream_t stream) {
  if (n <= 0) return;
  SPLAT_CUDA_CHECK(
      cudaMemsetAsync(s.view_count, 0, std::size_t(n) * sizeof(std::uint32_t), stream));
  const RasterParams& p = fwd.params;
  if (p.width > 0 && p.height > 0) {
    const dim3 block(16, 16);
    const dim3 grid(unsigned((p.width + 15) / 16), unsigned((p.height + 15) / 16));
    const auto kernel = p.fast_math ? count_kernel<true> : count_kernel<false>;
    kernel<<<grid, block, 0, stream>>>(p, fwd.lists.gaussian_ids, fwd.lists.ranges,
                                       fwd.lists.records, fwd.out.last, mask, s.view_count);
    SPLAT_CUDA_CHECK_LAUNCH("fastgs_count");
  }
  add_view_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, area, loss, s.view_count, s.count, s.score);
  SPLAT_CUDA_CHECK_LAUNCH("fastgs_add_view");
}

void fastgs_decide(int n,
                   GaussianPtrs in,
                   const float* grad2d,
                   const float* grad2d_abs,
                   const std::int32_t* vis_count,
                   const fastgs::Thresholds& t,
                   std::uint64_t seed,
                   const FastgsScratch& s,
                   const AdcScratch& adc,
                   std::int32_t* totals_host,
                   cudaStream_t stream) {
  begin_flags(n, "fastgs_decide", s, adc, stream);
  SPLAT_CUDA_CHECK(cudaMemsetAsync(s.candidates, 0, sizeof(std::int32_t), stream));
  decide_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, in.log_scales, in.raw_opacity, grad2d, grad2d_abs, vis_count, s.count, s.score,
      s.score_range, t, seed, s.decision, s.keys, s.index, s.candidates, adc.totals);
  SPLAT_CUDA_CHECK_LAUNCH("fastgs_decide");
  // Descending and stable: equal keys keep the ascending index order (cpu::prune_draw's ties).
  std::size_t temp_bytes = s.temp_bytes;
  SPLAT_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(s.temp, temp_bytes, s.keys,
                                                             s.keys_sorted, s.index, s.index_sorted,
                                                             n, 0, int(sizeof(float) * 8), stream));
  flags_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, s.index_sorted, s.decision, s.candidates, adc.flags);
  SPLAT_CUDA_CHECK_LAUNCH("fastgs_flags");
  adc_scan(n, adc, totals_host, stream);
}

void fastgs_final_flags(int n,
                        const float* raw_opacity,
                        float min_raw_opacity,
                        float max_score,
                        const FastgsScratch& s,
                        const AdcScratch& adc,
                        std::int32_t* totals_host,
                        cudaStream_t stream) {
  begin_flags(n, "fastgs_final_flags", s, adc, stream);
  final_flags_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, raw_opacity, s.score, s.score_range, min_raw_opacity, max_score, adc.flags);
  SPLAT_CUDA_CHECK_LAUNCH("fastgs_final_flags");
  adc_scan(n, adc, totals_host, stream);
}

}  // namespace splat::cuda
