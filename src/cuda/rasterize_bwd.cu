// Rasterization backward on the GPU: the gradient of cpu::rasterize_bwd. Same tiling as the
// forward, with each tile's list cut into segments of one block each (rasterize.h). Each warp
// walks its segment back to front on its own, in chunks of 32 staged one ahead through its shared
// memory, from the largest `last` of its pixels, each pixel starting at its own. The
// transmittance before each splat is recovered by division from the T behind the segment (the
// final T = 1 - alpha_out, as gsplat does, or the forward's record at the boundary).
// Per-splat contributions are summed across the warp with shuffles before one atomicAdd per
// warp and value: a splat usually covers many pixels of a warp (a lone-lane branch was slower), and
// the kernel is bound by instruction issue, not by its atomics (summing in shared memory first was
// slower too; tools/gpu-machine/perf-log.md).
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/rasterize_common.cuh"
#include "cuda/rasterize_cuda.h"
#include "engine/settings.h"

namespace splat::cuda {
namespace {

// One level of a reduce-scatter: lanes l and l ^ offset each keep one half of their kHalf * 2
// partial sums (the lane with `upper` the upper half) and send the other half to the partner.
template <int kHalf>
__device__ __forceinline__ void halve(float* v, bool upper, int offset) {  // v[0, 2 kHalf)
#pragma unroll
  for (int j = 0; j < kHalf; ++j) {
    const float send = upper ? v[j] : v[j + kHalf];
    const float keep = upper ? v[j + kHalf] : v[j];
    v[j] = keep + __shfl_xor_sync(kFullWarp, send, offset);
  }
}

// Sums kN values (a power of two up to 16) over the 32 lanes: halving at offsets 16, 8, ... leaves
// lane l one partial of value l / (32 / kN), which the lanes sharing it complete at the offsets
// below (16 values: 16 shuffles; a tree per value takes 5 each). Returns the total of value
// lane / (32 / kN). Every value's total is the same butterfly over the lanes whatever kN, so the
// same bits. Every lane must call it.
template <int kN>
__device__ __forceinline__ float warp_reduce_scatter(float (&v)[kN], int lane) {
  static_assert(kN >= 2 && kN <= 16 && (kN & (kN - 1)) == 0, "a power of two from 2 to 16 values");
  halve<kN / 2>(v, lane & 16, 16);
  if constexpr (kN >= 4) halve<kN / 4>(v, lane & 8, 8);
  if constexpr (kN >= 8) halve<kN / 8>(v, lane & 4, 4);
  if constexpr (kN >= 16) halve<1>(v, lane & 2, 2);
  float total = v[0];
  for (int offset = 16 / kN; offset > 0; offset /= 2)
    total += __shfl_xor_sync(kFullWarp, total, offset);
  return total;
}

// One warp's gradient of splat g: value `index` (0-1 means2d, 2-4 conic, 5-7 color, 8 opacity,
// 9-10 |means2d| with kAbs) added where it belongs, as a float atomic into v or (kFixed) a 64-bit
// integer atomic of its fixed-point value into fixed [N, kValues]. Lanes add different values in
// one instruction.
template <bool kFixed, bool kAbs>
__device__ __forceinline__ void add_splat_grad(std::uint32_t g,
                                               int index,
                                               float value,
                                               const ProjectedGradPtrs& v,
                                               unsigned long long* fixed) {
  if constexpr (kFixed) {
    constexpr std::size_t kValues = kAbs ? 11 : 9;
    constexpr float scale = float(1ull << kFixedFractionBits);
    atomicAdd(&fixed[std::size_t(g) * kValues + index],
              static_cast<unsigned long long>(__float2ll_rn(value * scale)));
  } else {
    float* dst = index < 2            ? v.means2d + std::size_t(g) * 2 + index
                 : index < 5          ? v.conics + std::size_t(g) * 3 + (index - 2)
                 : index < 8          ? v.colors + std::size_t(g) * 3 + (index - 5)
                 : !kAbs || index < 9 ? v.opacities + g
                                      : v.means2d_abs + std::size_t(g) * 2 + (index - 9);
    atomicAdd(dst, value);
  }
}

// kSide: the tile side; kFixed: the deterministic variant; kFast: RasterParams::fast_math; kAbs:
// also v.means2d_abs.
template <int kSide, bool kFixed, bool kFast, bool kAbs>
__global__ void __launch_bounds__(kSide* kSide) rasterize_bwd_kernel(
    RasterParams p,
    const std::uint32_t* __restrict__ gaussian_ids,  // [M] sorted by (tile, depth)
    const std::uint32_t* __restrict__ ranges,        // [tiles, 2]
    const std::uint32_t* __restrict__ order,         // [tiles] block -> tile
    const SplatRecord* __restrict__ records,         // [N]
    const float* __restrict__ image,                 // [H, W, 3]
    const float* __restrict__ alpha,                 // [H, W]
    const std::uint32_t* __restrict__ last,          // [H, W]
    const float4* __restrict__ boundaries,           // [kSegments - 1, H, W]
    const float* __restrict__ v_image,               // [H, W, 3]
    const float* __restrict__ v_alpha,               // [H, W] or null
    ProjectedGradPtrs v,                             // [N, ...] (float sums)
    unsigned long long* __restrict__ fixed) {        // [N, 9 or 11] (kFixed)
  constexpr int kWarps = kSide * kSide / 32;
  __shared__ Chunk s_chunk[2][kWarps];  // the warp's two slots (rasterize_common.cuh)

  const int rank = int(threadIdx.y) * kSide + int(threadIdx.x);
  const int lane = rank % 32, warp = rank / 32;
  // Block b: segment b % kSegments of tile order[b / kSegments], list entries [lo, hi).
  const std::uint32_t tile = order[blockIdx.x / kSegments], k = blockIdx.x % kSegments;
  const std::uint32_t start = ranges[tile * 2], count = ranges[tile * 2 + 1] - start;
  const std::uint32_t segment = segment_length(count);
  if (k * segment >= count) return;  // the whole block: no segment here
  const std::uint32_t lo = start + k * segment, hi = start + min(count, (k + 1) * segment);
  const int2 xy = tile_pixel<kSide>(rank, tile, p.grid.width);
  const int x = xy.x, y = xy.y;
  // Lanes outside the image keep staging and shuffling, with no entry valid for them.
  const bool inside = x < p.width && y < p.height;
  const float px = float(x) + 0.5f, py = float(y) + 0.5f;

  const std::size_t pix = inside ? std::size_t(y) * std::size_t(p.width) + std::size_t(x) : 0;
  const std::uint32_t my_last = inside ? last[pix] : start;
  const float t_final = inside ? 1.0f - alpha[pix] : 1.0f;
  float v_out[3] = {0.0f, 0.0f, 0.0f};
  float v_a = 0.0f;
  if (inside) {
    for (int ch = 0; ch < 3; ++ch) v_out[ch] = v_image[pix * 3 + ch];
    if (v_alpha) v_a = v_alpha[pix];
  }

  // behind = color of everything behind the current splat, background included; T = transmittance
  // in front of it. out = sum_i c_i a_i T_i + T_final bg, so with both:
  //   d out / d a_i = c_i T_i - behind_i / (1 - a_i),  d alpha_out / d a_i = T_final / (1 - a_i).
  // Behind the segment: the final state if the pixel stopped blending before hi, else the
  // forward's record at hi (T there, and out minus the color in front of hi).
  float trans = t_final;
  float behind[3];
  for (int ch = 0; ch < 3; ++ch) behind[ch] = t_final * p.background[ch];
  if (my_last > hi) {
    const float4 b =
        boundaries[std::size_t(k) * std::size_t(p.width) * std::size_t(p.height) + pix];
    trans = b.x;
    behind[0] = image[pix * 3 + 0] - b.y;
    behind[1] = image[pix * 3 + 1] - b.z;
    behind[2] = image[pix * 3 + 2] - b.w;
  }

  // Entries at or beyond the warp's largest `last` belong to none of its pixels: the warp walks
  // back to front from there (or from hi), entry e of the walk being list entry top - 1 - e, in
  // chunks of 32 (warp-uniform bounds, so the shuffles below see every lane).
  const std::uint32_t top = min(warp_max(my_last), hi);
  const std::uint32_t walk = top > lo ? top - lo : 0;
  const auto id_at = [&](std::uint32_t e) { return e < walk ? gaussian_ids[top - 1 - e] : 0u; };
  stage(s_chunk[0][warp], lane, unsigned(lane) < walk, id_at(lane), records);
  std::uint32_t next_id = id_at(32 + unsigned(lane));
  for (std::uint32_t c0 = 0, slot = 0; c0 < walk; c0 += 32, slot ^= 1) {
    __syncwarp();  // every lane is done with the other slot (the chunk before this one)
    stage(s_chunk[slot ^ 1][warp], lane, c0 + 32 + unsigned(lane) < walk, next_id, records);
    next_id = id_at(c0 + 64 + unsigned(lane));
    wait_staged();
    const Chunk& c = s_chunk[slot][warp];
    __syncwarp();
    const int n = int(min(walk - c0, 32u));
    // The pixels with a valid entry possible in this chunk (list entries top - c0 - n ..
    // top - 1 - c0): those that blended beyond its front.
    const WarpPixels wp =
        warp_pixels(int(px), int(py), my_last > top - c0 - unsigned(n));  // px = x + 0.5
    // The forward's alpha of entry t of the chunk at this pixel, recomputed bit for bit (same
    // expressions, same order), and whether the pixel blended it.
    struct Visit {
      float dx, dy, gauss, raw_alpha, a;
      bool valid;
    };
    const auto visit_at = [&](std::uint32_t t) {
      Visit r;
      const float4 co = c.q[t];
      r.dx = c.mean[t].x - px;
      r.dy = c.mean[t].y - py;
      const float power = gaussian_power(co, r.dx, r.dy);
      r.gauss = gaussian_falloff<kFast>(power);
      r.raw_alpha = co.w * r.gauss;
      r.a = fminf(p.alpha_max, r.raw_alpha);
      r.valid = top - 1 - (c0 + t) < my_last && !(power > 0.0f || power < kMinPower) &&
                !(r.a < config::alpha_min);
      return r;
    };
    // d loss / d (mean2d x, y, conic a, b, c, color r, g, b) of entry t into vg, and opacity,
    // where this pixel blended it; steps trans and behind to the front of the entry.
    const auto gradient = [&](std::uint32_t t, const Visit& s, float* vg, float& v_opacity) {
      if (!s.valid) return;
      // 1 / (1 - a), a <= alpha_max = 0.99 (kFast: the approximate reciprocal; the IEEE
      // division took five more instructions and a slow-path branch per visit).
      const float ra = reciprocal<kFast>(1.0f - s.a);
      trans *= ra;  // undo the forward's T * (1 - a): T in front of this splat
      const float4 c4 = c.color[t];
      const float col[3] = {c4.x, c4.y, c4.z};
      const float w = s.a * trans;
      float v_alpha_i = v_a * t_final * ra;
      for (int ch = 0; ch < 3; ++ch) {
        vg[5 + ch] = w * v_out[ch];
        v_alpha_i += (col[ch] * trans - behind[ch] * ra) * v_out[ch];
        behind[ch] += col[ch] * w;
      }
      // A clamped alpha is constant in opacity and power: no gradient through them.
      if (!(s.raw_alpha > p.alpha_max)) {
        // alpha = opacity * exp(power), power = -(a dx^2 / 2 + b dx dy + c dy^2 / 2), dx = mean -
        // px; co holds (-a/2, -b, -c/2).
        const float4 co = c.q[t];
        const float v_power = v_alpha_i * s.a;
        vg[0] = v_power * (2.0f * co.x * s.dx + co.y * s.dy);
        vg[1] = v_power * (2.0f * co.z * s.dy + co.y * s.dx);
        vg[2] = -0.5f * v_power * s.dx * s.dx;
        vg[3] = -v_power * s.dx * s.dy;
        vg[4] = -0.5f * v_power * s.dy * s.dy;
        v_opacity = v_alpha_i * s.gauss;
      }
    };
    // Two visited entries per step, back to front: their alphas are independent, and one
    // reduce-scatter sums both entries' 16 gradient values (16 shuffles instead of 18) and their
    // two opacities (5 instead of 10), with the latency of both chains overlapped.
    for (unsigned todo = warp_reached(c, lane, n, wp); todo != 0;) {
      const std::uint32_t t0 = unsigned(__ffs(todo)) - 1;
      todo &= todo - 1;
      const bool two = todo != 0;
      const std::uint32_t t1 = two ? unsigned(__ffs(todo)) - 1 : t0;
      todo &= todo - 1;
      const Visit s0 = visit_at(t0);
      Visit s1 = visit_at(t1);
      s1.valid = s1.valid && two;
      const unsigned lanes0 = __ballot_sync(kFullWarp, s0.valid),
                     lanes1 = __ballot_sync(kFullWarp, s1.valid);
      if ((lanes0 | lanes1) == 0) continue;
      float vg[16] = {}, vo[2] = {};
      gradient(t0, s0, vg, vo[0]);
      gradient(t1, s1, vg + 8, vo[1]);
      // Outside any branch: all 32 lanes shuffle. Lane l then holds the sum of value l / 2 of vg
      // (entry l / 16, value (l / 2) % 8), and lanes 0 and 16 the opacities'. kAbs: per entry e,
      // values 4 e .. 4 e + 3 of one reduce-scatter of 8 are its opacity, this pixel's |d loss /
      // d mean2d| on both axes and a zero, so lane l holds value l / 4; the opacities' sums have
      // the bits of the reduction of two (the same butterfly over the lanes).
      float v_other;  // the opacity of entry lane / 16; kAbs: value lane / 4 of vs
      if constexpr (kAbs) {
        float vs[8] = {vo[0], fabsf(vg[0]), fabsf(vg[1]), 0.0f,  // before vg is reduced in place
                       vo[1], fabsf(vg[8]), fabsf(vg[9]), 0.0f};
        v_other = warp_reduce_scatter(vs, lane);
      }
      const float sum = warp_reduce_scatter(vg, lane);
      if constexpr (!kAbs) v_other = warp_reduce_scatter(vo, lane);
      const int e = lane / 16;  // which of the two entries this lane's sums belong to
      if ((e ? lanes1 : lanes0) != 0) {
        const std::uint32_t g = c.id[e ? t1 : t0];
        if (lane % 2 == 0) add_splat_grad<kFixed, kAbs>(g, (lane / 2) % 8, sum, v, fixed);
        if constexpr (kAbs) {
          const int value = (lane / 4) % 4;  // opacity, |x|, |y|, none
          if (lane % 4 == 0 && value < 3)
            add_splat_grad<kFixed, kAbs>(g, 8 + value, v_other, v, fixed);
        } else if (lane % 16 == 0) {
          add_splat_grad<kFixed, kAbs>(g, 8, v_other, v, fixed);
        }
      }
    }
  }
  __pipeline_wait_prior(0);  // no copy may land in shared memory after the block is gone
}

// v = fixed / 2^kFixedFractionBits, back in float; fixed [N, 9], or [N, 11] with kAbs.
template <bool kAbs>
__global__ void fixed_to_float_kernel(int n,
                                      const unsigned long long* __restrict__ fixed,
                                      ProjectedGradPtrs v) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  constexpr double inv_scale = 1.0 / double(1ull << kFixedFractionBits);
  constexpr int kValues = kAbs ? 11 : 9;
  float val[kValues];
  for (int j = 0; j < kValues; ++j)
    val[j] = float(double(static_cast<long long>(fixed[std::size_t(i) * kValues + j])) * inv_scale);
  for (int j = 0; j < 2; ++j) v.means2d[i * 2 + j] = val[j];
  for (int j = 0; j < 3; ++j) v.conics[i * 3 + j] = val[2 + j];
  for (int j = 0; j < 3; ++j) v.colors[i * 3 + j] = val[5 + j];
  v.opacities[i] = val[8];
  if constexpr (kAbs)
    for (int j = 0; j < 2; ++j) v.means2d_abs[i * 2 + j] = val[9 + j];
}

// The launch of both variants (and of both fast_math variants of each); false when there is
// nothing to rasterize.
template <bool kFixed>
bool launch(const char* who,
            const RasterState& fwd,
            const RasterOutGrad& v_out,
            const ProjectedGradPtrs& v,
            unsigned long long* fixed,
            cudaStream_t stream) {
  const RasterParams& p = fwd.params;
  const TileLists& lists = fwd.lists;
  dim3 grid;
  if (!tile_launch_grid(who, p, grid)) return false;
  grid.x *= kSegments;
  const auto run = [&](auto side, auto abs) {
    constexpr int kSide = decltype(side)::value;
    constexpr bool kAbs = decltype(abs)::value;
    const auto kernel = p.fast_math ? rasterize_bwd_kernel<kSide, kFixed, true, kAbs>
                                    : rasterize_bwd_kernel<kSide, kFixed, false, kAbs>;
    static const bool carved =
        limit_shared_memory(rasterize_bwd_kernel<kSide, kFixed, true, kAbs>, 132) &&
        limit_shared_memory(rasterize_bwd_kernel<kSide, kFixed, false, kAbs>, 132);
    (void)carved;  // four blocks of 16x16
    kernel<<<grid, dim3(kSide, kSide), 0, stream>>>(
        p, lists.gaussian_ids, lists.ranges, lists.order, lists.records, fwd.out.image,
        fwd.out.alpha, fwd.out.last, fwd.out.boundaries, v_out.v_image, v_out.v_alpha, v, fixed);
  };
  with_tile_side(p.grid, [&](auto side) {
    if (v.means2d_abs)
      run(side, std::true_type{});
    else
      run(side, std::false_type{});
  });
  SPLAT_CUDA_CHECK_LAUNCH(who);
  return true;
}

}  // namespace

void rasterize_bwd(const RasterState& fwd,
                   const RasterOutGrad& v_out,
                   const ProjectedGradPtrs& v,
                   cudaStream_t stream) {
  launch<false>("rasterize_bwd", fwd, v_out, v, nullptr, stream);
}

void rasterize_bwd_deterministic(const RasterState& fwd,
                                 const RasterOutGrad& v_out,
                                 int n,
                                 unsigned long long* fixed,
                                 const ProjectedGradPtrs& v,
                                 cudaStream_t stream) {
  if (n <= 0) return;
  SPLAT_CUDA_CHECK(cudaMemsetAsync(
      fixed, 0, std::size_t(n) * fixed_values(v) * sizeof(unsigned long long), stream));
  launch<true>("rasterize_bwd_deterministic", fwd, v_out, v, fixed, stream);
  constexpr int kThreads = 256;
  const unsigned blocks = unsigned((n + kThreads - 1) / kThreads);
  if (v.means2d_abs)
    fixed_to_float_kernel<true><<<blocks, kThreads, 0, stream>>>(n, fixed, v);
  else
    fixed_to_float_kernel<false><<<blocks, kThreads, 0, stream>>>(n, fixed, v);
  SPLAT_CUDA_CHECK_LAUNCH("rasterize_bwd_deterministic: fixed_to_float");
}

}  // namespace splat::cuda
