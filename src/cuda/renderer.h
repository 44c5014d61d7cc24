#pragma once
// The differentiable renderer on the GPU: project -> intersect -> sort -> tile ranges ->
// rasterize, and back, on one stream, with scratch from the per-domain arenas. The training step
// (step_engine.cpp) and the GPU tests drive the same code.
#include <algorithm>
#include <array>
#include <cstdint>

#include "core/camera.h"
#include "cuda/arena.h"
#include "cuda/intersect_cuda.h"
#include "cuda/project_cuda.h"
#include "cuda/rasterize_cuda.h"
#include "cuda/render_work.h"
#include "cuda/sync_log.h"
#include "cuda/timing.h"
#include "engine/settings.h"

namespace splat::cuda {

struct PerSplat {
  ProjectedPtrs proj;
  ProjectedGradPtrs v;
  SplatTiles tiles;  // the intersection stage's (records: the rasterizer's per-splat records)
  void carve(Carver& c, int n);
};

struct PerIsect {
  IsectBuffers lists;  // keys: tile ids, ids: gaussian ids
  void carve(Carver& c, int m);
};

struct PerTile {
  std::uint32_t* ranges;  // [tiles, 2]
  std::uint32_t* order;   // [tiles] longest list first (tile_order)
  std::uint32_t* order_scratch;
  TempStorage order_temp;
  void carve(Carver& c, int tiles);
};

struct PerPixel {
  float *image, *alpha, *v_image, *loss_scratch, *sums;
  std::uint32_t* last;
  float4* boundaries;  // the forward's per-pixel state at segment boundaries (rasterize.h)
  void carve(Carver& c, std::pair<int, int> width_height);
};

// How the per-intersection buffers get their size.
enum class Sizing {
  // One host wait reads the intersection count, and the buffers are sized to it.
  Exact,
  // No wait: the buffers hold capacity() entries and the sort runs over all of them
  // (intersect_pad). A count beyond the capacity raises status()[1], the step's abort flag:
  // the lists were cut short, the kernels that change the model skip the step, and the backend
  // repeats it after reserve() (cuda/step_engine.cpp). Needed where no host wait may sit inside a
  // step: a captured graph, or a pipeline that queues the next step before this one is done.
  Bounded,
};

// What a forward leaves for its backward (cpu::RenderState's role). The pointers point into the
// renderer's scratch arenas: valid until the next forward, which may move or overwrite them.
struct ForwardState {
  ProjectState project;  // the projection's params and per-splat outputs
  RasterState raster;    // the tile lists and the per-pixel outputs (raster.out.image, alpha, ...)
  // The intersection count of an exact forward; the capacity of a bounded one.
  int intersections = 0;
};

struct FixedGrads {          // rasterize_bwd_deterministic's fixed-point sums
  unsigned long long* sums;  // [N, 9 or 11] (fixed_values)
  void carve(Carver& c, std::size_t values) { sums = c.take<unsigned long long>(values); }
};

struct AbsGrads {      // the backward's ProjectedGradPtrs::means2d_abs, when asked for
  float* means2d_abs;  // [N, 2]
  void carve(Carver& c, int n) { means2d_abs = c.take<float>(std::size_t(n) * 2); }
};

class Renderer {
 public:
  // fast_math: the rasterizer's approximate exp2 and reciprocal (RasterParams::fast_math).
  Renderer(cudaStream_t stream, SyncLog& syncs, StageTimer& timer, bool fast_math = true);

  // Renders n splats (K SH coefficients per channel in storage) into pixels().image / alpha,
  // and returns the state its backward reads (valid until the next forward). Exact sizing waits
  // once, for the intersection count. With device_cam, the projection reads the camera from that
  // device copy (a replayed graph); `cam` still gives the image size. filter3d: the splats'
  // Mip-Splatting 3D filter variances [n], or null for none.
  ForwardState forward(GaussianPtrs params,
                       int n,
                       int K,
                       const Camera& cam,
                       const RasterSettings& rs,
                       Sizing sizing = Sizing::Exact,
                       const CameraParams* device_cam = nullptr,
                       const float* filter3d = nullptr);
  // Gradients of the raw parameters `params` for the forward that returned `fwd`, which must be
  // the last one (its state lives in scratch the next forward reuses), from d loss / d image
  // (v_out.v_image [H,W,3]) and d loss / d alpha (v_out.v_alpha [H,W], may be null). Overwrites
  // every entry of grads. Deterministic: the rasterizer's sums in fixed point
  // (rasterize_bwd_deterministic), the same bits on every run. With sh_adam, grads.sh is not
  // written: the projection backward updates the SH coefficients with Adam instead (ShAdam in
  // cuda/project_cuda.h). With means2d_abs, splats().v.means2d_abs holds the rasterizer's sums of
  // the per-pixel |d loss / d mean2d| afterwards (AbsGS's statistic), else it is null. With
  // pose_terms ([N, 12], train.pose_opt), each splat's terms of d loss / d [R | t] of the camera
  // (project_bwd's view_terms).
  void backward(GaussianPtrs params,
                const ForwardState& fwd,
                const RasterOutGrad& v_out,
                GaussianGradPtrs grads,
                bool deterministic = false,
                const ShAdam* sh_adam = nullptr,
                bool means2d_abs = false,
                float* pose_terms = nullptr);

  // backend.timing: the counts of cuda/render_work.h for the forward `fwd` (the last one) and its
  // backward, read back with a host wait; never called on the untimed path.
  std::array<double, kRenderWorkSums> count_work(const ForwardState& fwd);

  PerSplat& splats() { return splats_.get(); }
  PerPixel& pixels() { return pixels_.get(); }
  // Device bytes of the scratch groups.
  std::size_t bytes() const {
    return splats_.bytes() + isects_.bytes() + tiles_.bytes() + pixels_.bytes() + fixed_.bytes() +
           abs_.bytes();
  }
  int allocations() const {
    return splats_.allocations() + isects_.allocations() + tiles_.allocations() +
           pixels_.allocations() + fixed_.allocations() + abs_.allocations();
  }

  // Bounded sizing: room for at least m intersections from the next forward on.
  void reserve(int m) { capacity_ = std::max(capacity_, m); }
  int capacity() const { return capacity_; }
  // Device [3]: the last bounded forward's intersection count, the abort flag, the largest count.
  const int* status() const { return status_.data(); }
  const int* abort_flag() const { return status_.data() + 1; }
  // Test hook: poisons every scratch group (not the status).
  void poison_scratch() {
    splats_.poison(stream_);
    isects_.poison(stream_);
    tiles_.poison(stream_);
    pixels_.poison(stream_);
    fixed_.poison(stream_);
    abs_.poison(stream_);
  }
  void clear_abort() {
    SPLAT_CUDA_CHECK(cudaMemsetAsync(status_.data() + 1, 0, sizeof(int), stream_));
  }

 private:
  cudaStream_t stream_;
  SyncLog& syncs_;
  StageTimer& timer_;
  const bool fast_math_;
  int capacity_ = 0;
  ScratchGroup<PerSplat, int> splats_;
  ScratchGroup<PerIsect, int> isects_;
  ScratchGroup<PerTile, int> tiles_;
  ScratchGroup<PerPixel, std::pair<int, int>> pixels_;
  ScratchGroup<FixedGrads, std::size_t> fixed_;
  ScratchGroup<AbsGrads, int> abs_;
  DeviceBuffer<int> status_{3};
  Pinned<std::int32_t> count_host_{1};
  DeviceBuffer<unsigned long long> work_{kRenderWorkSums};
  Pinned<unsigned long long> work_host_{kRenderWorkSums};
};

}  // namespace splat::cuda
