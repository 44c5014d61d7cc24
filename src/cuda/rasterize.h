#pragma once
// Rasterization on the GPU: mirrors cpu/rasterize.h. One 16x16 thread block per tile, splats
// fetched in batches through shared memory; backward walks back to front from each pixel's last
// contribution and reduces gradients per warp before the atomics.
#include <cstdint>

#include "cuda/types.h"

namespace splat::cuda {

struct RasterParams {
  int width = 0, height = 0;
  int tiles_x = 0, tiles_y = 0;
  float background[3] = {1, 1, 1};
};

// Inputs of the sorted intersections.
struct TileLists {
  const std::uint32_t* gaussian_ids;  // [M] sorted by (tile, depth)
  const std::uint32_t* ranges;        // [tiles, 2]
};

// image [H, W, 3] (background included), alpha [H, W] = 1 - final T,
// last [H, W] = index one past the last intersection the pixel blended (for the backward).
void rasterize_fwd(const RasterParams& p, const ProjectedPtrs& proj, TileLists lists, float* image,
                   float* alpha, std::uint32_t* last, cudaStream_t stream);

// Accumulates into v (the caller zeroes it first). v_alpha may be null.
void rasterize_bwd(const RasterParams& p, const ProjectedPtrs& proj, TileLists lists,
                   const float* alpha, const std::uint32_t* last, const float* v_image,
                   const float* v_alpha, const ProjectedGradPtrs& v, cudaStream_t stream);

}  // namespace splat::cuda
