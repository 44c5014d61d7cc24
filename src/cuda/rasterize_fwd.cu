// Rasterization forward on the GPU: front-to-back alpha blending of depth-sorted splats per 16x16
// tile (3DGS, Kerbl et al. 2023, eq. 3), the blending rule of cpu::blend_pixel. One thread block
// per tile, one thread per pixel, and each warp (an 8x4 patch) walks the tile's list on its own:
// chunks of 32 splats, one loaded by each lane into the warp's slice of shared memory, so a splat
// is read once per warp, not once per pixel, and no warp waits at a block barrier for the others
// (warps skip different splats and finish at different depths).
#include <cstdint>
#include <string>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/rasterize.h"
#include "cuda/rasterize_common.cuh"
#include "render/settings.h"

namespace splat::cuda {
namespace {

constexpr int kBlock = kRasterBlock, kWarps = kBlock / 32;

__global__ void __launch_bounds__(kBlock)
    rasterize_fwd_kernel(RasterParams p,
                         const float* __restrict__ means2d,               // [N, 2]
                         const float* __restrict__ conics,                // [N, 3]
                         const float* __restrict__ colors,                // [N, 3]
                         const float* __restrict__ opacities,             // [N]
                         const std::uint32_t* __restrict__ gaussian_ids,  // [M] sorted by (tile, depth)
                         const std::uint32_t* __restrict__ ranges,        // [tiles, 2]
                         const std::uint32_t* __restrict__ order,         // [tiles] block -> tile
                         const float* __restrict__ q_max,                 // [N] tiles::max_quad
                         float* __restrict__ image,                       // [H, W, 3]
                         float* __restrict__ alpha,                       // [H, W]
                         std::uint32_t* __restrict__ last) {              // [H, W]
  // One chunk of 32 entries per warp.
  __shared__ float2 s_mean[kWarps][32];
  __shared__ float4 s_conic_opacity[kWarps][32];  // -a/2, -b, -c/2, opacity
  __shared__ float3 s_color[kWarps][32];
  __shared__ float s_qmax[kWarps][32];

  const int rank = int(threadIdx.y) * config::tile_size + int(threadIdx.x), lane = rank % 32, warp = rank / 32;
  const std::uint32_t tile = order[blockIdx.x];
  const int2 xy = tile_pixel(rank, tile, p.tiles_x);
  const int x = xy.x, y = xy.y;
  // Lanes of a partial edge tile outside the image still load their share of each chunk.
  const bool inside = x < p.width && y < p.height;
  const std::uint32_t start = ranges[tile * 2], count = ranges[tile * 2 + 1] - start;
  const float px = float(x) + 0.5f, py = float(y) + 0.5f;  // pixel center
  const WarpPixels wp = warp_pixels(x, y);

  float trans = 1.0f;
  float cr = 0.0f, cg = 0.0f, cb = 0.0f;
  std::uint32_t last_k = start;  // one past the last blended intersection
  bool done = !inside;

  for (std::uint32_t c0 = 0; c0 < count && !__all_sync(kFullWarp, done); c0 += 32) {
    __syncwarp();  // the warp is done with the previous chunk
    if (c0 + unsigned(lane) < count) {
      const std::uint32_t g = gaussian_ids[start + c0 + unsigned(lane)];
      s_mean[warp][lane] = make_float2(means2d[g * 2], means2d[g * 2 + 1]);
      s_conic_opacity[warp][lane] = exponent_and_opacity(conics, opacities, g);
      s_color[warp][lane] = make_float3(colors[g * 3], colors[g * 3 + 1], colors[g * 3 + 2]);
      s_qmax[warp][lane] = q_max[g];
    }
    __syncwarp();
    const int n = int(min(count - c0, 32u));
    for (unsigned todo = warp_reached(s_mean[warp], s_conic_opacity[warp], s_qmax[warp], lane, n, wp); todo != 0 && !done;
         todo &= todo - 1) {
      const int j = __ffs(todo) - 1;
      const float4 co = s_conic_opacity[warp][j];
      const float dx = s_mean[warp][j].x - px, dy = s_mean[warp][j].y - py;
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
      const float3 col = s_color[warp][j];
      cr += col.x * a * trans;
      cg += col.y * a * trans;
      cb += col.z * a * trans;
      trans = next;
      last_k = start + c0 + unsigned(j) + 1;
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
                                                   lists.ranges, lists.order, lists.q_max, image, alpha, last);
  SPLAT_CUDA_CHECK_LAUNCH("rasterize_fwd");
}

}  // namespace splat::cuda
