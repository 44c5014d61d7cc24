#pragma once
// The differentiable renderer on the GPU: project -> intersect -> sort -> tile ranges ->
// rasterize, and back, on one stream, with scratch from the per-domain arenas. The training step
// (backend.cpp) and the GPU tests drive the same code.
#include <cstdint>

#include "core/camera.h"
#include "cuda/arena.h"
#include "cuda/project.h"
#include "cuda/rasterize.h"
#include "cuda/sync.h"
#include "cuda/timing.h"
#include "render/settings.h"

namespace splat::cuda {

struct PerSplat {
  ProjectedPtrs proj;
  ProjectedGradPtrs v;
  std::int32_t *tiles_per_splat, *offsets;
  void* scan_temp;
  std::size_t scan_bytes;
  void carve(Carver& c, int n);
};

struct PerIsect {
  std::uint64_t *keys, *keys_sorted;
  std::uint32_t *ids, *ids_sorted;
  void* sort_temp;
  std::size_t sort_bytes;
  void carve(Carver& c, int m);
};

struct PerTile {
  std::uint32_t* ranges;  // [tiles, 2]
  void carve(Carver& c, int tiles);
};

struct PerPixel {
  float *image, *alpha, *v_image, *loss_scratch, *sums;
  std::uint32_t* last;
  void carve(Carver& c, std::pair<int, int> width_height);
};

class Renderer {
 public:
  Renderer(cudaStream_t stream, SyncLog& syncs, StageTimer& timer)
      : stream_(stream), syncs_(syncs), timer_(timer) {}

  // Renders n splats (K SH coefficients per channel in storage) into pixels().image / alpha.
  // Waits once, for the intersection count that sizes the per-intersection buffers.
  void forward(GaussianPtrs params, int n, int K, const Camera& cam, const RasterSettings& rs);
  // Gradients of the raw parameters from d loss / d image [H,W,3] and d loss / d alpha [H,W]
  // (may be null), for the last forward. Overwrites every entry of grads.
  void backward(GaussianPtrs params, const float* v_image, const float* v_alpha, GaussianGradPtrs grads);

  PerSplat& splats() { return splats_.get(); }
  PerPixel& pixels() { return pixels_.get(); }
  int intersections() const { return m_; }
  int allocations() const { return splats_.allocations() + isects_.allocations() + tiles_.allocations() + pixels_.allocations(); }

 private:
  cudaStream_t stream_;
  SyncLog& syncs_;
  StageTimer& timer_;
  int n_ = 0, m_ = 0;
  ProjectParams project_params_;
  RasterParams raster_params_;
  TileLists lists_{};
  ScratchGroup<PerSplat, int> splats_;
  ScratchGroup<PerIsect, int> isects_;
  ScratchGroup<PerTile, int> tiles_;
  ScratchGroup<PerPixel, std::pair<int, int>> pixels_;
  Pinned<std::int32_t> count_host_{1};
};

}  // namespace splat::cuda
