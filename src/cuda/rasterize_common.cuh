#pragma once
// Device code the rasterizer's forward and backward must share exactly: the backward recomputes
// every alpha and has to take the forward's skip decisions bit for bit.
#include <cuda_pipeline.h>

#include <string>
#include <type_traits>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/rasterize_cuda.h"
#include "engine/settings.h"
#include "engine/tiles.h"

namespace splat::cuda {

// The launch grid of both passes: one block per tile, block b taking tile lists.order[b]. Throws
// if p's tile grid does not fit its image or has a side the kernels are not built for; returns
// false for an empty image (nothing to launch).
inline bool tile_launch_grid(const char* who, const RasterParams& p, dim3& grid) {
  const tiles::Grid& g = p.grid;
  if (p.width < 0 || p.height < 0 || (g.side != tiles::kLargeTile && g.side != tiles::kSmallTile) ||
      !(g == tiles::Grid::with_side(p.width, p.height, g.side)))
    throw Error(std::string(who) + ": tile grid " + std::to_string(g.width) + "x" +
                std::to_string(g.height) + " of " + std::to_string(g.side) + " px does not fit a " +
                std::to_string(p.width) + "x" + std::to_string(p.height) + " image");
  grid = dim3(unsigned(g.count()));
  return g.count() > 0;
}

// Calls f(std::integral_constant<int, side>{}) with the tile side of the grid, a template
// argument of the kernels (their block is side x side threads).
template <class F>
void with_tile_side(const tiles::Grid& g, F&& f) {
  if (g.side == tiles::kSmallTile)
    f(std::integral_constant<int, tiles::kSmallTile>{});
  else
    f(std::integral_constant<int, tiles::kLargeTile>{});
}

// Asks for `kb` of shared memory per SM for a rasterizer pass (of the 228 KB an H200 SM can give;
// the rest of its 256 KB stays L1 cache), which caps its resident blocks. Every warp stages its
// own copy of its tile's chunks, so the copies of a block's other warps come from L1, and fewer
// resident blocks with more L1 are faster on the H200: 64 KB for the forward, 132 KB for the
// backward (tools/gpu-machine/perf-log.md has the replays that chose them).
template <class Kernel>
bool limit_shared_memory(Kernel* kernel, int kb) {
  SPLAT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        (kb * 100 + 227) / 228));
  return true;
}

inline constexpr unsigned kFullWarp = 0xffffffffu;

// The box of the pixels of a warp's active lanes, as tiles::reaches_pixels takes it:
// [x0, x0 + w] x [y0, y0 + h]. At least one lane must be active. A splat that reaches no active
// pixel changes nothing for the warp, so the box shrinks as lanes finish: in a warp on an object's
// edge, the background pixels that never saturate no longer make it walk the splats behind the
// saturated ones.
// Minimum and maximum of a value over the full warp: one redux instruction from sm_80 on, a
// five-step butterfly of shuffles on Turing (sm_75), which lacks it.
__device__ __forceinline__ unsigned warp_min(unsigned v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_min_sync(kFullWarp, v);
#else
  for (int offset = 16; offset > 0; offset /= 2) v = min(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
#endif
}
__device__ __forceinline__ unsigned warp_max(unsigned v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_max_sync(kFullWarp, v);
#else
  for (int offset = 16; offset > 0; offset /= 2) v = max(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
#endif
}

struct WarpPixels {
  int x0, y0, w, h;
};
__device__ __forceinline__ WarpPixels warp_pixels(int x, int y, bool active) {
  const unsigned x0 = warp_min(active ? unsigned(x) : ~0u);
  const unsigned x1 = warp_max(active ? unsigned(x) : 0u);
  const unsigned y0 = warp_min(active ? unsigned(y) : ~0u);
  const unsigned y1 = warp_max(active ? unsigned(y) : 0u);
  return {int(x0), int(y0), int(x1 - x0), int(y1 - y0)};
}

// tiles::reaches_pixels on the box wp with the hardware's approximate reciprocal (rcp.approx, one
// ulp) where it divides: the intersection lists, which every backend must build alike, keep the
// exact function, but the warp test only has to be conservative. Each edge's minimum of q is taken
// at dy = -b dx / c; a dy off by a few ulp raises q there by c (a few ulp of dy)^2, far inside
// max_quad's margin (0.1% + 1e-3). Four IEEE divisions were a third of the chunk-level code.
// (The test only drops entries that blend into none of the warp's pixels, so no output depends on
// its rounding: backend.fast_math leaves it as it is.)
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ bool box_reached(
    float a, float b, float c, float mean_x, float mean_y, float q_max, const WarpPixels& wp) {
  if (q_max < 0.0f) return false;
  if (!(a > 0.0f && c > 0.0f)) return true;  // not positive definite: keep the whole box
  const float lx = add_rn(add_rn(float(wp.x0), 0.5f), -mean_x);
  const float ly = add_rn(add_rn(float(wp.y0), 0.5f), -mean_y);
  const float hx = add_rn(lx, float(wp.w)), hy = add_rn(ly, float(wp.h));
  if (lx <= 0.0f && hx >= 0.0f && ly <= 0.0f && hy >= 0.0f) return true;
  // min over t in [lo, hi] of u d^2 + 2 b d t + v t^2 for a fixed d, given 1 / v
  const auto edge_min = [b](float u, float v, float inv_v, float d, float lo, float hi) {
    const float t = fminf(fmaxf(-(b * d) * inv_v, lo), hi);
    return u * d * d + 2.0f * b * d * t + v * t * t;
  };
  const float inv_a = rcp_approx(a), inv_c = rcp_approx(c);
  if (!(inv_a < INFINITY && inv_c < INFINITY)) return true;  // a denormal flushed to zero
  const float q =
      fminf(fminf(edge_min(a, c, inv_c, lx, ly, hy), edge_min(a, c, inv_c, hx, ly, hy)),
            fminf(edge_min(c, a, inv_a, ly, lx, hx), edge_min(c, a, inv_a, hy, lx, hx)));
  return q <= q_max;
}

// One warp's copy of a chunk of 32 list entries: their ids and records (rasterize.h).
struct Chunk {
  std::uint32_t id[32];
  float4 q[32], mean[32], color[32];
};

// Which entries of a chunk (n valid) can blend into some pixel of the box wp (the warp's active
// pixels), as a bit mask: lane l tests entry l with box_reached, the intersection's tile test
// (engine/tiles.h, conservative by its margin) with approximate reciprocals. Both passes visit, in
// order, only the entries whose bit is set: an entry that reaches none of the warp's pixels would
// be skipped at each of them, so nothing else changes, and it costs a 32nd of a test instead of an
// exponent per pixel.
__device__ __forceinline__ unsigned warp_reached(const Chunk& c,
                                                 int lane,
                                                 int n,
                                                 const WarpPixels& wp) {
  bool reached = false;
  if (lane < n) {
    const float4 q = c.q[lane], m = c.mean[lane];
    reached = box_reached(-2.0f * q.x, -q.y, -2.0f * q.z, m.x, m.y, m.z, wp);
  }
  return __ballot_sync(kFullWarp, reached);
}

// Each warp walks its tile's list on its own, in chunks of 32 entries, through two Chunk slots in
// shared memory: while it works on one chunk, the next one's records are on their way (cp.async,
// global to shared without registers), so the gathers' latency hides behind the work. Lane l
// stages entry l of a chunk; `stage` always commits a group (an empty one past the end), so
// wait_staged() before chunk k always means "chunk k has landed" for this lane. The caller
// separates a slot's last reads from its next stage, and a lane's wait from the other lanes'
// reads, with __syncwarp.
__device__ __forceinline__ void stage(
    Chunk& c, int lane, bool valid, std::uint32_t g, const SplatRecord* records) {
  if (valid) {
    c.id[lane] = g;
    __pipeline_memcpy_async(&c.q[lane], &records[g].q, sizeof(float4));
    __pipeline_memcpy_async(&c.mean[lane], &records[g].mean, sizeof(float4));
    __pipeline_memcpy_async(&c.color[lane], &records[g].color, sizeof(float4));
  }
  __pipeline_commit();
}

// All but the latest staged chunk have landed (this lane's copies).
__device__ __forceinline__ void wait_staged() {
  __pipeline_wait_prior(1);
}

// The pixel of thread `rank` (threadIdx.y * kSide + threadIdx.x) of tile (tx, ty)'s block: warp w
// covers the 8x4 patch (w % (kSide / 8), w / (kSide / 8)) of the tile and lane l its pixel
// (l % 8, l / 8). A compact patch meets fewer splats than a 16x2 pair of rows: fewer warps reduce
// each splat's gradients in the backward, and a warp's pixels finish their lists closer together
// in the forward.
template <int kSide>
__device__ __forceinline__ int2 tile_pixel(int rank, std::uint32_t tile, int tiles_x) {
  static_assert(kSide % 8 == 0 && kSide * kSide % 32 == 0, "tiles of whole 8x4 patches");
  constexpr int kPatchesX = kSide / 8;
  const int warp = rank / 32, lane = rank % 32;
  const int tx = int(tile % unsigned(tiles_x)), ty = int(tile / unsigned(tiles_x));
  return make_int2(tx * kSide + (warp % kPatchesX) * 8 + lane % 8,
                   ty * kSide + (warp / kPatchesX) * 4 + lane / 8);
}

// cpu::kMinPower = log(alpha_min) as the float the CPU compares with in float.
inline constexpr float kMinPower = float(-5.5412635451584258);

// Exponent of the 2D Gaussian at d = mean2d - pixel, from a record's q:
// -(a dx^2 / 2 + b dx dy + c dy^2 / 2) = dx (q.x dx + q.y dy) + q.z dy^2. Explicit roundings
// (_rn) so that no compiler contraction differs between the forward and the backward.
__device__ __forceinline__ float gaussian_power(float4 q, float dx, float dy) {
  return __fmaf_rn(dx, __fmaf_rn(q.y, dy, __fmul_rn(q.x, dx)), __fmul_rn(__fmul_rn(q.z, dy), dy));
}

// The two approximations of the rasterizer's arithmetic, and their accurate forms, chosen at
// launch by RasterParams::fast_math (backend.fast_math) as a template argument of the kernels, so
// that neither variant branches per pixel.
//
// The Gaussian's falloff exp(power), power in [log(alpha_min), 0]. kFast: the hardware's exp2
// (a few ulp; the CPU reference's std::exp agrees to 1e-6 relative); __expf's ex2 without .ftz
// guards inputs below -126 (three instructions per visit), and here the input is at least
// log2(alpha_min) ~ -8, where both give the same bits. Otherwise expf (at most 2 ulp, CUDA
// programming guide). Forward and backward call this one function with the same kFast, so that
// the backward's recomputed alphas are the forward's bit for bit.
template <bool kFast>
__device__ __forceinline__ float gaussian_falloff(float power) {
  if constexpr (kFast) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(power * 1.44269504088896341f));
    return y;
  } else {
    return expf(power);
  }
}

// 1 / x. kFast: the hardware's approximate reciprocal (one ulp; the IEEE division takes five more
// instructions and a slow-path branch). Otherwise correctly rounded, as 1.0f / x.
template <bool kFast>
__device__ __forceinline__ float reciprocal(float x) {
  if constexpr (kFast)
    return rcp_approx(x);
  else
    return __frcp_rn(x);
}

}  // namespace splat::cuda
