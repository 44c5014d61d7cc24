// Rasterization forward on the GPU: front-to-back alpha blending of depth-sorted splats per 16x16
// tile (3DGS, Kerbl et al. 2023, eq. 3), the blending rule of cpu::blend_pixel. One thread block
// per tile, one thread per pixel; the tile's splats pass through shared memory in batches of one
// splat per thread, so every splat is read from global memory once per tile, not once per pixel.
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

__global__ void __launch_bounds__(kBlock)
    rasterize_fwd_kernel(RasterParams p,
                         const float* __restrict__ means2d,               // [N, 2]
                         const float* __restrict__ conics,                // [N, 3]
                         const float* __restrict__ colors,                // [N, 3]
                         const float* __restrict__ opacities,             // [N]
                         const std::uint32_t* __restrict__ gaussian_ids,  // [M] sorted by (tile, depth)
                         const std::uint32_t* __restrict__ ranges,        // [tiles, 2]
                         const std::uint32_t* __restrict__ order,         // [tiles] block -> tile
                         float* __restrict__ image,                       // [H, W, 3]
                         float* __restrict__ alpha,                       // [H, W]
                         std::uint32_t* __restrict__ last) {              // [H, W]
  __shared__ float2 s_mean[kBlock];
  __shared__ float4 s_conic_opacity[kBlock];  // -a/2, -b, -c/2, opacity
  __shared__ float3 s_color[kBlock];
  __shared__ float s_qmax[kBlock];

  const int rank = int(threadIdx.y) * config::tile_size + int(threadIdx.x), lane = rank % 32;
  const std::uint32_t tile = order[blockIdx.x];
  const int2 xy = tile_pixel(rank, tile, p.tiles_x);
  const int x = xy.x, y = xy.y;
  // Threads of a partial edge tile outside the image still load their share of each batch.
  const bool inside = x < p.width && y < p.height;
  const std::uint32_t start = ranges[tile * 2], count = ranges[tile * 2 + 1] - start;
  const float px = float(x) + 0.5f, py = float(y) + 0.5f;  // pixel center
  const WarpPixels wp = warp_pixels(x, y);

  float trans = 1.0f;
  float cr = 0.0f, cg = 0.0f, cb = 0.0f;
  std::uint32_t last_k = start;  // one past the last blended intersection
  bool done = !inside;

  for (std::uint32_t base = 0; base < count; base += kBlock) {
    // The barrier also keeps the previous batch in shared memory until everyone has used it.
    if (__syncthreads_count(done) == kBlock) break;
    const std::uint32_t k = start + base + unsigned(rank);
    if (base + unsigned(rank) < count) {
      const std::uint32_t g = gaussian_ids[k];
      s_mean[rank] = make_float2(means2d[g * 2], means2d[g * 2 + 1]);
      s_conic_opacity[rank] = exponent_and_opacity(conics, opacities, g);
      s_color[rank] = make_float3(colors[g * 3], colors[g * 3 + 1], colors[g * 3 + 2]);
      s_qmax[rank] = tiles::max_quad(opacities[g]);
    }
    __syncthreads();
    const int n = int(min(count - base, std::uint32_t(kBlock)));
    for (int c0 = 0; c0 < n && !__all_sync(kFullWarp, done); c0 += 32) {
      for (unsigned todo = warp_reached(s_mean, s_conic_opacity, s_qmax, c0 + lane, n, wp); todo != 0 && !done;
           todo &= todo - 1) {
        const int j = c0 + __ffs(todo) - 1;
        const float4 co = s_conic_opacity[j];
        const float dx = s_mean[j].x - px, dy = s_mean[j].y - py;
        const float power = gaussian_power(co, dx, dy);
        // Opacity <= 1, so below log(1/255) alpha < alpha_min for sure: skip the exp.
        if (power > 0.0f || power < kMinPower) continue;
        const float a = fminf(config::alpha_max, co.w * gaussian_falloff(power));
        if (a < config::alpha_min) continue;
        const float next = trans * (1.0f - a);
        // Stop before a splat that would take T to transmittance_min or below (3DGS convention).
        if (next <= config::transmittance_min) {
          done = true;
          break;
        }
        const float3 col = s_color[j];
        cr += col.x * a * trans;
        cg += col.y * a * trans;
        cb += col.z * a * trans;
        trans = next;
        last_k = start + base + unsigned(j) + 1;
      }
    }
  }

  if (!inside) return;
  const std::size_t pix = std::size_t(y) * std::size_t(p.width) + std::size_t(x);
  image[pix * 3 + 0] = cr + trans * p.background[0];
  image[pix * 3 + 1] = cg + trans * p.background[1];
  image[pix * 3 + 2] = cb + trans * p.background[2];
  alpha[pix] = 1.0f - trans;
  last[pix] = last_k;
}

}  // namespace

void rasterize_fwd(const RasterParams& p, const ProjectedPtrs& proj, TileLists lists, float* image,
                   float* alpha, std::uint32_t* last, cudaStream_t stream) {
  dim3 grid;
  if (!tile_launch_grid("rasterize_fwd", p, grid)) return;
  const dim3 block(config::tile_size, config::tile_size);
  rasterize_fwd_kernel<<<grid, block, 0, stream>>>(p, proj.means2d, proj.conics, proj.colors,
                                                   proj.opacities, lists.gaussian_ids,
                                                   lists.ranges, lists.order, image, alpha, last);
  SPLAT_CUDA_CHECK_LAUNCH("rasterize_fwd");
}

}  // namespace splat::cuda
