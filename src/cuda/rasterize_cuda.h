#pragma once
// Rasterization on the GPU: mirrors cpu/rasterize_cpu.h. One thread block per tile (16x16 or 8x8
// pixels, engine/tiles.h), one thread per pixel, each warp fetching the tile's splats in chunks of
// 32 through shared memory on its own; backward walks back to front from each pixel's last
// contribution and reduces gradients per warp before the atomics.
#include <vector_types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/types.h"
#include "engine/hd.h"
#include "engine/settings.h"
#include "engine/tiles.h"

namespace splat::cuda {

struct RasterParams {
  int width = 0, height = 0;
  tiles::Grid grid;  // the tiles of the lists; tiles::Grid::with_side of the image
  float background[3] = {1, 1, 1};
  // The hardware's approximate exp2 and reciprocal (backend.fast_math), or expf and IEEE division:
  // two compiled variants of each pass (rasterize_common.cuh). A backward must be given the value
  // its forward had.
  bool fast_math = true;
  float alpha_max = config::alpha_max;  // RasterSettings::alpha_max
};

// A splat as both passes read it, one 48-byte record each (intersect_count writes them): a warp
// stages a list entry with three 16-byte copies from two 32-byte sectors, where gathering the
// projection's arrays took nine 4-byte copies from about six sectors of L1 (each warp stages its
// own copy of its tile's chunks, so L1 holds them for the block's other warps).
struct SplatRecord {
  float4 q;  // the exponent's coefficients (-a/2, -b, -c/2) of the conic (a, b, c), and the opacity
  float4 mean;   // mean2d x, y; tiles::max_quad of the opacity; 0
  float4 color;  // r, g, b; 0
};
// The coefficients are exact (powers of two) and the rest are copies, so passes reading a record
// compute what they computed from the arrays, bit for bit.
SPLAT_HD inline SplatRecord splat_record(
    const float* conic, float opacity, const float* mean2d, float q_max, const float* color) {
  return {{-0.5f * conic[0], -conic[1], -0.5f * conic[2], opacity},
          {mean2d[0], mean2d[1], q_max, 0.0f},
          {color[0], color[1], color[2], 0.0f}};
}

// Inputs of the sorted intersections.
struct TileLists {
  const std::uint32_t* gaussian_ids;  // [M] sorted by (tile, depth)
  const std::uint32_t* ranges;        // [tiles, 2]
  const std::uint32_t* order;         // [tiles] the order the blocks take the tiles in (tile_order)
  const SplatRecord* records;         // [N] (intersect_count)
};

// The backward cuts each tile's list into kSegments segments of segment_length(count) entries and
// runs one block per segment: a long list would otherwise be eight long chains of work, one per
// warp, which the GPU runs nearly alone at the end of the kernel. A segment starts from the state
// behind it, which the forward records per pixel at every segment boundary the pixel passes.
inline constexpr int kSegments = 8;
// Segments of at least 64 entries, the fastest of 32, 64 and 128 (tools/gpu-machine/perf-log.md).
inline constexpr std::uint32_t kMinSegment = 64;  // entries; a multiple of the 32-entry chunk
__host__ __device__ constexpr std::uint32_t segment_length(std::uint32_t count) {
  const std::uint32_t even = (count + kSegments - 1) / kSegments;
  return even > kMinSegment ? (even + 31) / 32 * 32 : kMinSegment;
}
// float4s of the forward's boundary record: [kSegments - 1, H, W].
inline std::size_t boundary_count(int width, int height) {
  return std::size_t(kSegments - 1) * std::size_t(width) * std::size_t(height);
}

// What the forward writes per pixel and the backward reads (cpu::RasterOut, with the state the
// backward needs).
struct RasterOut {
  float* image;         // [H, W, 3] background included
  float* alpha;         // [H, W] 1 - final T
  std::uint32_t* last;  // [H, W] index one past the last intersection the pixel blended
  float4* boundaries;   // [kSegments - 1, H, W] (rasterize_fwd)
};

// The gradient of the loss w.r.t. the forward's outputs.
struct RasterOutGrad {
  const float* v_image;  // [H, W, 3]
  const float* v_alpha;  // [H, W], or null
};

// What rasterize_fwd read and wrote, as the backward reads it (a backward must be given the
// params, lists and outputs of its forward).
struct RasterState {
  RasterParams params;
  TileLists lists;
  RasterOut out;
};

// Writes every pixel of out: image (background included), alpha = 1 - final T, last, and
// boundaries: entry k of a pixel = (T, r, g, b so far, background not included) before list entry
// start + (k + 1) segment_length(count) of its tile, written only where the pixel was still
// blending there (last beyond it).
void rasterize_fwd(const RasterParams& p,
                   const TileLists& lists,
                   const RasterOut& out,
                   cudaStream_t stream);

// Accumulates into v (the caller zeroes it first), v.means2d_abs too when it is not null (a
// variant of the kernel; the other sums are the same bits either way). Reads the forward's state.
// Float atomics: the sums depend on the order the warps reach them, so two runs can differ in the
// last bits.
void rasterize_bwd(const RasterState& fwd,
                   const RasterOutGrad& v_out,
                   const ProjectedGradPtrs& v,
                   cudaStream_t stream);

// The deterministic variant: every warp's contribution is rounded to a multiple of
// 2^-kFixedFractionBits and summed as a 64-bit integer, which is associative, so the result does
// not depend on the order of the atomics. fixed [N, fixed_values(v)] (means2d 2, conics 3,
// colors 3, opacity 1, then with v.means2d_abs |means2d| 2) for the n splats is zeroed here; v is
// overwritten with the sums converted back to float. Range +-2^19 per value, resolution 2^-44
// (5.7e-14): gradients of a mean-pixel loss are far inside both. (With 2^-40, quaternion
// gradients of small splats lost enough bits that 15 Adam steps moved the quaternions 2.5e-3
// (relative L2) away from a float-atomics run.)
inline constexpr int kFixedFractionBits = 44;
inline int fixed_values(const ProjectedGradPtrs& v) {
  return v.means2d_abs ? 11 : 9;
}
void rasterize_bwd_deterministic(const RasterState& fwd,
                                 const RasterOutGrad& v_out,
                                 int n,
                                 unsigned long long* fixed,
                                 const ProjectedGradPtrs& v,
                                 cudaStream_t stream);

// Test hook: the warp test of both passes (rasterize_common.cuh) run on the device, for a splat of
// conic (a, b, c), mean and opacity against the pixels [x0, x0 + w] x [y0, y0 + h]: 1 where it
// keeps the splat. Its contract is to be conservative: a splat it drops blends into none of those
// pixels.
struct WarpTestCase {
  float a, b, c, mean_x, mean_y, opacity;
  int x0, y0, w, h;
};
std::vector<std::uint8_t> warp_test(const std::vector<WarpTestCase>& cases);

// Test hook: the two functions RasterParams::fast_math switches (rasterize_common.cuh), run on
// the device: falloff[i] = exp(powers[i]) and reciprocal[i] = 1 / denominators[i].
struct MathTestResult {
  std::vector<float> falloff, reciprocal;
};
MathTestResult math_test(const std::vector<float>& powers,
                         const std::vector<float>& denominators,
                         bool fast_math);

}  // namespace splat::cuda
