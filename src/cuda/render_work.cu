// The counts of cuda/render_work.h: one thread per splat, tile and pixel (the three ranges
// overlap), each warp's sums added with one atomic per count.
#include <algorithm>
#include <cstdint>

#include "cuda/check.h"
#include "cuda/render_work.h"
#include "cuda/warp.cuh"

namespace splat::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    render_work_kernel(int n,
                       const int* __restrict__ radii,             // [N, 2]
                       const float* __restrict__ v_colors,        // [N, 3]
                       const std::uint32_t* __restrict__ ranges,  // [tiles, 2]
                       const std::uint32_t* __restrict__ last,    // [H, W]
                       tiles::Grid grid,
                       int width,
                       int height,
                       unsigned long long* __restrict__ sums) {  // [kRenderWorkSums]
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long c[kRenderWorkSums] = {};
  if (i < std::size_t(n)) {
    const bool kept = radii[2 * i] > 0 || radii[2 * i + 1] > 0;
    c[kVisible] = kept;
    c[kShLive] = kept && (v_colors[3 * i] != 0.f || v_colors[3 * i + 1] != 0.f ||
                          v_colors[3 * i + 2] != 0.f);
  }
  if (i < std::size_t(grid.count())) {
    const int tx = int(i % std::size_t(grid.width)), ty = int(i / std::size_t(grid.width));
    const int w = min(grid.side, width - tx * grid.side),
              h = min(grid.side, height - ty * grid.side);
    c[kListVisits] = (unsigned long long)(ranges[2 * i + 1] - ranges[2 * i]) * unsigned(w * h);
  }
  if (i < std::size_t(width) * std::size_t(height)) {
    const int x = int(i % std::size_t(width)), y = int(i / std::size_t(width));
    const std::size_t tile = std::size_t(y / grid.side) * grid.width + std::size_t(x / grid.side);
    const std::uint32_t start = ranges[2 * tile], count = ranges[2 * tile + 1] - start;
    const std::uint32_t walk = last[i] - start;  // last starts at start: nothing blended
    c[kBlendVisits] = walk;
    // Segment k + 1 of the backward starts from the record at boundary (k + 1) * segment when the
    // pixel blended past it (rasterize_bwd_kernel: my_last > hi).
    const std::uint32_t segment = segment_length(count);
    for (int k = 1; k < kSegments; ++k) {
      const std::uint32_t b = std::uint32_t(k) * segment;
      c[kBoundaryReads] += b < count && walk > b;
    }
  }
#pragma unroll
  for (int k = 0; k < kRenderWorkSums; ++k) {
    const unsigned long long s = warp_sum(c[k]);
    if (threadIdx.x % 32 == 0 && s != 0) atomicAdd(&sums[k], s);
  }
}

}  // namespace

void count_render_work(int n,
                       const int* radii,
                       const float* v_colors,
                       const RasterState& raster,
                       unsigned long long* sums,
                       cudaStream_t stream) {
  const RasterParams& p = raster.params;
  const std::size_t items = std::max({std::size_t(std::max(n, 0)), std::size_t(p.grid.count()),
                                      std::size_t(p.width) * std::size_t(p.height)});
  if (items == 0) return;
  render_work_kernel<<<unsigned((items + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      n, radii, v_colors, raster.lists.ranges, raster.out.last, p.grid, p.width, p.height, sums);
  SPLAT_CUDA_CHECK_LAUNCH("render_work_kernel");
}

}  // namespace splat::cuda
