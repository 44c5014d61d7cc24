// Rasterization forward on the GPU: front-to-back alpha blending of depth-sorted splats per
// tile (3DGS, Kerbl et al. 2023, eq. 3), the blending rule of cpu::blend_pixel. One thread block
// per tile (kSide x kSide pixels, engine/tiles.h), one thread per pixel, and each warp (an 8x4
// patch) walks the tile's list on its own: chunks of 32 splats, one staged by each lane into the
// warp's shared memory one chunk ahead (rasterize_common.cuh), so a splat is read once per warp,
// not once per pixel, and no warp waits at a block barrier for the others (warps skip different
// splats and finish at different depths).
#include <cstdint>
#include <string>

#include "core/error.h"
#include "cuda/buffer.h"
#include "cuda/check.h"
#include "cuda/rasterize_common.cuh"
#include "cuda/rasterize_cuda.h"
#include "engine/settings.h"

namespace splat::cuda {
namespace {

// Visited entries whose alphas one step of the loop computes together: four was the fastest of 1,
// 2, 4 and 8 (eight: more registers, and exponents computed past the last set bit;
// tools/gpu-machine/perf-log.md).
constexpr int kVisits = 4;

template <int kSide, bool kFast>  // the tile side; RasterParams::fast_math
__global__ void __launch_bounds__(kSide* kSide) rasterize_fwd_kernel(
    RasterParams p,
    const std::uint32_t* __restrict__ gaussian_ids,  // [M] sorted by (tile, depth)
    const std::uint32_t* __restrict__ ranges,        // [tiles, 2]
    const std::uint32_t* __restrict__ order,         // [tiles] block -> tile
    const SplatRecord* __restrict__ records,         // [N]
    float* __restrict__ image,                       // [H, W, 3]
    float* __restrict__ alpha,                       // [H, W]
    std::uint32_t* __restrict__ last,                // [H, W]
    float4* __restrict__ boundaries) {               // [kSegments - 1, H, W]
  constexpr int kWarps = kSide * kSide / 32;
  __shared__ Chunk s_chunk[2][kWarps];  // the warp's two slots (rasterize_common.cuh)

  const int rank = int(threadIdx.y) * kSide + int(threadIdx.x), lane = rank % 32, warp = rank / 32;
  const std::uint32_t tile = order[blockIdx.x];
  const int2 xy = tile_pixel<kSide>(rank, tile, p.grid.width);
  const int x = xy.x, y = xy.y;
  // Lanes of a partial edge tile outside the image still stage their share of each chunk.
  const bool inside = x < p.width && y < p.height;
  const std::uint32_t start = ranges[tile * 2], count = ranges[tile * 2 + 1] - start;
  const float px = float(x) + 0.5f, py = float(y) + 0.5f;                          // pixel center
  const std::size_t pix = std::size_t(y) * std::size_t(p.width) + std::size_t(x);  // when inside
  const std::size_t pixels = std::size_t(p.width) * std::size_t(p.height);
  // The next segment boundary (a multiple of 32, so chunks start on it) and its record's index.
  const std::uint32_t segment = segment_length(count);
  std::uint32_t boundary = segment, boundary_k = 0;

  float trans = 1.0f;
  float cr = 0.0f, cg = 0.0f, cb = 0.0f;
  std::uint32_t last_k = start;  // one past the last blended intersection
  bool done = !inside;

  // Entry c0 + lane of the list is lane's share of chunk c0; its id is read one chunk ahead.
  const auto id_at = [&](std::uint32_t e) { return e < count ? gaussian_ids[start + e] : 0u; };
  stage(s_chunk[0][warp], lane, unsigned(lane) < count, id_at(lane), records);
  std::uint32_t next_id = id_at(32 + unsigned(lane));
  for (std::uint32_t c0 = 0, slot = 0; c0 < count && !__all_sync(kFullWarp, done);
       c0 += 32, slot ^= 1) {
    // The state in front of a segment boundary, for the backward's block of the next segment.
    if (c0 == boundary) {
      if (!done) boundaries[boundary_k * pixels + pix] = make_float4(trans, cr, cg, cb);
      boundary += segment;
      ++boundary_k;
    }
    __syncwarp();  // every lane is done with the other slot (the chunk before this one)
    stage(s_chunk[slot ^ 1][warp], lane, c0 + 32 + unsigned(lane) < count, next_id, records);
    next_id = id_at(c0 + 64 + unsigned(lane));
    wait_staged();
    const Chunk& c = s_chunk[slot][warp];
    __syncwarp();
    const int n = int(min(count - c0, 32u));
    const WarpPixels wp =
        warp_pixels(int(px), int(py), !done);  // the pixels still blending (px = x + 0.5)
    // Opacity <= 1, so below log(1/255) alpha < alpha_min for sure: such an entry is skipped.
    const auto alpha_at = [&](int j, float& a) {
      const float4 co = c.q[j];
      const float power = gaussian_power(co, c.mean[j].x - px, c.mean[j].y - py);
      a = fminf(p.alpha_max, co.w * gaussian_falloff<kFast>(power));
      return !(power > 0.0f || power < kMinPower) && !(a < config::alpha_min);
    };
    // Blends entry j with alpha a; false where T would reach transmittance_min or below, where the
    // pixel stops before the entry (3DGS convention).
    const auto blend = [&](int j, float a) {
      const float next = trans * (1.0f - a);
      if (next <= config::transmittance_min) return false;
      const float4 col = c.color[j];
      cr += col.x * a * trans;
      cg += col.y * a * trans;
      cb += col.z * a * trans;
      trans = next;
      last_k = start + c0 + unsigned(j) + 1;
      return true;
    };
    // kVisits entries per step: their alphas are independent, so their exponents run together
    // (the forward is bound by these chains, and at the end of a long tile a warp runs nearly
    // alone). The blending stays in list order.
    for (unsigned todo = warp_reached(c, lane, n, wp); todo != 0 && !done;) {
      int j[kVisits];
      float a[kVisits];
      bool use[kVisits];
#pragma unroll
      for (int v = 0; v < kVisits; ++v) {
        const bool any = todo != 0;  // always for v = 0
        j[v] = any ? __ffs(todo) - 1 : 0;
        todo &= todo - 1;
        use[v] = alpha_at(j[v], a[v]) && any;  // no branch between the exponents
      }
#pragma unroll
      for (int v = 0; v < kVisits; ++v)
        if (use[v] && !blend(j[v], a[v])) {
          done = true;
          break;
        }
    }
  }
  __pipeline_wait_prior(0);  // no copy may land in shared memory after the block is gone

  if (!inside) return;
  image[pix * 3 + 0] = cr + trans * p.background[0];
  image[pix * 3 + 1] = cg + trans * p.background[1];
  image[pix * 3 + 2] = cb + trans * p.background[2];
  alpha[pix] = 1.0f - trans;
  last[pix] = last_k;
}

__global__ void warp_test_kernel(int n,
                                 const WarpTestCase* __restrict__ cases,
                                 std::uint8_t* __restrict__ keep) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const WarpTestCase c = cases[i];
  keep[i] = box_reached(c.a, c.b, c.c, c.mean_x, c.mean_y, tiles::max_quad(c.opacity),
                        {c.x0, c.y0, c.w, c.h});
}

template <bool kFast>
__global__ void math_test_kernel(int n,
                                 const float* __restrict__ powers,        // [n]
                                 const float* __restrict__ denominators,  // [n]
                                 float* __restrict__ falloff,             // [n]
                                 float* __restrict__ reciprocal_out) {    // [n]
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  falloff[i] = gaussian_falloff<kFast>(powers[i]);
  reciprocal_out[i] = reciprocal<kFast>(denominators[i]);
}

}  // namespace

MathTestResult math_test(const std::vector<float>& powers,
                         const std::vector<float>& denominators,
                         bool fast_math) {
  if (powers.size() != denominators.size())
    throw Error("math_test: " + std::to_string(powers.size()) + " powers but " +
                std::to_string(denominators.size()) + " denominators");
  if (powers.empty()) return {};
  DeviceBuffer<float> p(powers.size()), d(powers.size()), f(powers.size()), r(powers.size());
  p.upload(powers);
  d.upload(denominators);
  const int n = int(powers.size()), threads = 256;
  const auto kernel = fast_math ? math_test_kernel<true> : math_test_kernel<false>;
  kernel<<<(n + threads - 1) / threads, threads>>>(n, p.data(), d.data(), f.data(), r.data());
  SPLAT_CUDA_CHECK_LAUNCH("math_test");
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
  return {f.download(), r.download()};
}

std::vector<std::uint8_t> warp_test(const std::vector<WarpTestCase>& cases) {
  if (cases.empty()) return {};
  DeviceBuffer<WarpTestCase> in(cases.size());
  in.upload(cases);
  DeviceBuffer<std::uint8_t> keep(cases.size());
  const int n = int(cases.size()), threads = 256;
  warp_test_kernel<<<(n + threads - 1) / threads, threads>>>(n, in.data(), keep.data());
  SPLAT_CUDA_CHECK_LAUNCH("warp_test");
  SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
  return keep.download();
}

void rasterize_fwd(const RasterParams& p,
                   const TileLists& lists,
                   const RasterOut& out,
                   cudaStream_t stream) {
  dim3 grid;
  if (!tile_launch_grid("rasterize_fwd", p, grid)) return;
  with_tile_side(p.grid, [&](auto side) {
    constexpr int kSide = decltype(side)::value;
    const auto kernel =
        p.fast_math ? rasterize_fwd_kernel<kSide, true> : rasterize_fwd_kernel<kSide, false>;
    static const bool carved = limit_shared_memory(rasterize_fwd_kernel<kSide, true>, 64) &&
                               limit_shared_memory(rasterize_fwd_kernel<kSide, false>, 64);
    (void)carved;  // two blocks of 16x16
    kernel<<<grid, dim3(kSide, kSide), 0, stream>>>(p, lists.gaussian_ids, lists.ranges,
                                                    lists.order, lists.records, out.image,
                                                    out.alpha, out.last, out.boundaries);
  });
  SPLAT_CUDA_CHECK_LAUNCH("rasterize_fwd");
}

}  // namespace splat::cuda
