// Rasterization backward on the GPU: the gradient of cpu::rasterize_bwd. Same tiling as the
// forward; each tile's intersection list is walked back to front in shared-memory batches, each
// pixel starting at its own `last`. The transmittance before each splat is recovered by division
// from T_final = 1 - alpha_out (as gsplat does), so the forward stores no per-splat state.
// Per-splat contributions are summed across the warp with shuffles before one atomicAdd per
// warp and value: a splat usually covers many pixels of a warp, and atomics are the bottleneck.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/rasterize.h"
#include "cuda/rasterize_common.cuh"
#include "render/settings.h"

namespace splat::cuda {
namespace {

constexpr int kBlock = kRasterBlock;
constexpr unsigned kFullWarp = 0xffffffffu;

// Tree sum over the 32 lanes; the result is complete in lane 0. Every lane must call it.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(kFullWarp, v, offset);
  return v;
}

__global__ void __launch_bounds__(kBlock)
    rasterize_bwd_kernel(RasterParams p,
                         const float* __restrict__ means2d,               // [N, 2]
                         const float* __restrict__ conics,                // [N, 3]
                         const float* __restrict__ colors,                // [N, 3]
                         const float* __restrict__ opacities,             // [N]
                         const std::uint32_t* __restrict__ gaussian_ids,  // [M] sorted by (tile, depth)
                         const std::uint32_t* __restrict__ ranges,        // [tiles, 2]
                         const float* __restrict__ alpha,                 // [H, W]
                         const std::uint32_t* __restrict__ last,          // [H, W]
                         const float* __restrict__ v_image,               // [H, W, 3]
                         const float* __restrict__ v_alpha,               // [H, W] or null
                         float* __restrict__ v_means2d,                   // [N, 2]
                         float* __restrict__ v_conics,                    // [N, 3]
                         float* __restrict__ v_colors,                    // [N, 3]
                         float* __restrict__ v_opacities) {               // [N]
  __shared__ std::uint32_t s_id[kBlock];
  __shared__ float2 s_mean[kBlock];
  __shared__ float4 s_conic_opacity[kBlock];  // a, b, c, opacity
  __shared__ float3 s_color[kBlock];
  __shared__ std::uint32_t s_block_last;

  const int rank = int(threadIdx.y) * config::tile_size + int(threadIdx.x);
  const int lane = rank % 32;
  const int x = int(blockIdx.x) * config::tile_size + int(threadIdx.x);
  const int y = int(blockIdx.y) * config::tile_size + int(threadIdx.y);
  // Threads outside the image keep loading and shuffling, with no entry valid for them.
  const bool inside = x < p.width && y < p.height;
  const std::uint32_t tile = blockIdx.y * unsigned(p.tiles_x) + blockIdx.x;
  const std::uint32_t start = ranges[tile * 2];
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

  // Entries at or beyond the block's largest `last` belong to no pixel: never load them.
  if (rank == 0) s_block_last = start;
  __syncthreads();
  if (my_last > start) atomicMax(&s_block_last, my_last);
  __syncthreads();
  const std::uint32_t block_last = s_block_last;
  const std::uint32_t warp_last = __reduce_max_sync(kFullWarp, my_last);

  // behind = color of everything behind the current splat, background included; T = transmittance
  // in front of it. out = sum_i c_i a_i T_i + T_final bg, so with both:
  //   d out / d a_i = c_i T_i - behind_i / (1 - a_i),  d alpha_out / d a_i = T_final / (1 - a_i).
  float trans = t_final;
  float behind[3];
  for (int ch = 0; ch < 3; ++ch) behind[ch] = t_final * p.background[ch];

  for (std::uint32_t hi = block_last; hi > start;) {  // this batch is [hi - n, hi)
    const std::uint32_t n = min(hi - start, std::uint32_t(kBlock));
    __syncthreads();  // everyone is done with the previous batch
    if (unsigned(rank) < n) {
      const std::uint32_t g = gaussian_ids[hi - 1 - unsigned(rank)];
      s_id[rank] = g;
      s_mean[rank] = make_float2(means2d[g * 2], means2d[g * 2 + 1]);
      s_conic_opacity[rank] =
          make_float4(conics[g * 3], conics[g * 3 + 1], conics[g * 3 + 2], opacities[g]);
      s_color[rank] = make_float3(colors[g * 3], colors[g * 3 + 1], colors[g * 3 + 2]);
    }
    __syncthreads();
    // Entry t is intersection hi - 1 - t; those at or beyond warp_last are no lane's (warp-uniform
    // start, so the shuffles below see every lane).
    for (std::uint32_t t = hi > warp_last ? hi - warp_last : 0; t < n; ++t) {
      const float4 co = s_conic_opacity[t];
      const float dx = s_mean[t].x - px, dy = s_mean[t].y - py;
      // The forward's decisions, recomputed bit for bit (same expressions, same order).
      const float power = gaussian_power(co.x, co.y, co.z, dx, dy);
      const float gauss = expf(power);
      const float raw_alpha = co.w * gauss;
      const float a = fminf(config::alpha_max, raw_alpha);
      const bool valid = hi - 1 - t < my_last && !(power > 0.0f || power < kMinPower) &&
                         !(a < config::alpha_min);
      if (!__any_sync(kFullWarp, valid)) continue;

      float v_mean[2] = {0.0f, 0.0f}, v_conic[3] = {0.0f, 0.0f, 0.0f};
      float v_col[3] = {0.0f, 0.0f, 0.0f}, v_opacity = 0.0f;
      if (valid) {
        const float one_minus = 1.0f - a;
        const float ra = 1.0f / one_minus;
        trans = trans / one_minus;  // undo the forward's T * (1 - a): T in front of this splat
        const float3 col = s_color[t];
        const float c[3] = {col.x, col.y, col.z};
        const float w = a * trans;
        float v_alpha_i = v_a * t_final * ra;
        for (int ch = 0; ch < 3; ++ch) {
          v_col[ch] = w * v_out[ch];
          v_alpha_i += (c[ch] * trans - behind[ch] * ra) * v_out[ch];
          behind[ch] += c[ch] * w;
        }
        // A clamped alpha is constant in opacity and power: no gradient through them.
        if (!(raw_alpha > config::alpha_max)) {
          // alpha = opacity * exp(power), power = -(a dx^2 / 2 + b dx dy + c dy^2 / 2), dx = mean - px.
          const float v_power = v_alpha_i * a;
          v_mean[0] = -v_power * (co.x * dx + co.y * dy);
          v_mean[1] = -v_power * (co.z * dy + co.y * dx);
          v_conic[0] = -0.5f * v_power * dx * dx;
          v_conic[1] = -v_power * dx * dy;
          v_conic[2] = -0.5f * v_power * dy * dy;
          v_opacity = v_alpha_i * gauss;
        }
      }
      // Outside any branch: all 32 lanes shuffle.
      for (int j = 0; j < 2; ++j) v_mean[j] = warp_sum(v_mean[j]);
      for (int j = 0; j < 3; ++j) v_conic[j] = warp_sum(v_conic[j]);
      for (int j = 0; j < 3; ++j) v_col[j] = warp_sum(v_col[j]);
      v_opacity = warp_sum(v_opacity);
      if (lane == 0) {
        const std::uint32_t g = s_id[t];
        for (int j = 0; j < 2; ++j) atomicAdd(&v_means2d[g * 2 + j], v_mean[j]);
        for (int j = 0; j < 3; ++j) atomicAdd(&v_conics[g * 3 + j], v_conic[j]);
        for (int j = 0; j < 3; ++j) atomicAdd(&v_colors[g * 3 + j], v_col[j]);
        atomicAdd(&v_opacities[g], v_opacity);
      }
    }
    hi -= n;
  }
}

}  // namespace

void rasterize_bwd(const RasterParams& p, const ProjectedPtrs& proj, TileLists lists,
                   const float* alpha, const std::uint32_t* last, const float* v_image,
                   const float* v_alpha, const ProjectedGradPtrs& v, cudaStream_t stream) {
  const int tiles_x = (p.width + config::tile_size - 1) / config::tile_size;
  const int tiles_y = (p.height + config::tile_size - 1) / config::tile_size;
  if (p.width < 0 || p.height < 0 || p.tiles_x != tiles_x || p.tiles_y != tiles_y)
    throw Error("rasterize_bwd: tile grid " + std::to_string(p.tiles_x) + "x" +
                std::to_string(p.tiles_y) + " does not fit a " + std::to_string(p.width) + "x" +
                std::to_string(p.height) + " image");
  if (tiles_x == 0 || tiles_y == 0) return;
  const dim3 grid{unsigned(tiles_x), unsigned(tiles_y)};
  const dim3 block(config::tile_size, config::tile_size);
  rasterize_bwd_kernel<<<grid, block, 0, stream>>>(
      p, proj.means2d, proj.conics, proj.colors, proj.opacities, lists.gaussian_ids, lists.ranges,
      alpha, last, v_image, v_alpha, v.means2d, v.conics, v.colors, v.opacities);
  SPLAT_CUDA_CHECK_LAUNCH("rasterize_bwd");
}

}  // namespace splat::cuda
