#pragma once
// What one view's render did, counted on the device for the roofline of the timed stages
// (backend.timing; tools/bench/roofline.py sets the stage times against these counts).
#include <cuda_runtime.h>

#include "cuda/rasterize_cuda.h"
#include "cuda/types.h"

namespace splat::cuda {

// The sums count_render_work adds to, in this order.
enum RenderWorkSum : int {
  kVisible,        // splats the projection kept (radii not both zero)
  kShLive,         // kept splats whose color got a gradient: sparse SH Adam's live splats
  kListVisits,     // sum over tiles of (list length) x (the tile's pixels inside the image)
  kBlendVisits,    // sum over pixels of the list entries up to the last one the pixel blended
  kBoundaryReads,  // the forward's segment-boundary records the backward reads (rasterize.h)
  kRenderWorkSums
};

// Adds the counts of the render whose forward state is `raster` and whose backward wrote
// v_colors into sums[kRenderWorkSums] (64-bit, zeroed by the caller). radii: the projection's [N,
// 2].
void count_render_work(int n,
                       const int* radii,
                       const float* v_colors,
                       const RasterState& raster,
                       unsigned long long* sums,
                       cudaStream_t stream);

}  // namespace splat::cuda
