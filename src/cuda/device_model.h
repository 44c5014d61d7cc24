#pragma once
// The model on the device: the splats' parameters, gradients and Adam moments in five groups, the
// ADC statistics and the Mip-Splatting 3D filter kept per splat, and the count of buffer changes
// that tells the step engine when a captured graph is stale. The host boundary of TrainState
// (upload, download, digest, finite check) is here; the step engine (cuda/step_engine.h) and the
// refine ticks (cuda/refine_cuda.h) change it on the stream.
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/camera.h"
#include "cuda/buffer.h"
#include "cuda/cuda_backend.h"
#include "cuda/sync_log.h"
#include "cuda/types.h"
#include "engine/backend.h"

namespace splat::cuda {

// The model's five parameter groups on the device, in Gaussians::for_each_group order.
struct Groups {
  std::array<DeviceBuffer<float>, 5> g;
  void upload(const Gaussians& h) {
    int i = 0;
    h.for_each_group([&](const char*, const std::vector<float>& v) { g[i++].upload(v); });
  }
  void download(Gaussians& h) const {
    int i = 0;
    h.for_each_group([&](const char*, std::vector<float>& v) { v = g[i++].download(); });
  }
  GaussianPtrs in() const {
    return {g[0].data(), g[1].data(), g[2].data(), g[3].data(), g[4].data()};
  }
  GaussianGradPtrs out() {
    return {g[0].data(), g[1].data(), g[2].data(), g[3].data(), g[4].data()};
  }
  // Slots past the live count read zero (upload and the refine ticks keep it so).
  void zero_tails(cudaStream_t stream) {
    for (auto& b : g) b.zero_tail(stream);
  }
};

// The model's slot arrays, as the refine ticks' kernels see them: five groups in
// Gaussians::for_each_group order, each [slots, width].
struct ModelSlots {
  float* params[5];
  float* m[5];  // Adam first moments
  float* v[5];  // Adam second moments
  int width[5];
};

// train.appearance = affine: the per-image colour transforms (engine/appearance.h), the step's
// gradient and the Adam moments, [images, 12] each; empty when off.
struct DeviceAppearance {
  DeviceBuffer<float> params, grads, m, v;
  bool on() const { return params.size() > 0; }
  std::size_t images() const { return params.size() / kAppearanceFloats; }
};

// train.pose_opt: the per-image pose corrections (engine/pose.h), their Adam moments, [images, 9]
// each, and each one's Adam step count [images]; empty when off.
struct DevicePose {
  DeviceBuffer<float> params, m, v;
  DeviceBuffer<std::int32_t> steps;
  bool on() const { return params.size() > 0; }
  std::size_t images() const { return params.size() / kPoseFloats; }
};

class DeviceModel {
 public:
  DeviceModel(cudaStream_t stream, SyncLog& syncs) : stream_(stream), syncs_(syncs) {}

  // The caller has drained the step engine before each of these: nothing in flight reads the
  // buffers they replace or download.
  void upload(const TrainState& s);
  TrainState download() const;
  Gaussians download_params() const;
  // engine/state_digest.h's digest of the parameters and moments, summed on the device.
  std::uint64_t digest() const;
  // Backend::diverged_groups: the groups that have diverged by `limits` (DivergenceLimits;
  // "appearance" for the transforms, "pose" for the corrections).
  std::vector<std::string> diverged_groups(const DivergenceLimits& limits = {}) const;
  // Device bytes held, capacities included.
  std::size_t bytes() const;
  // model_arrays (cuda/cuda_backend.h): the 20 arrays with their sizes and capacities.
  std::vector<DeviceArrayView> arrays() const;

  // ADC statistics: one entry per live splat. Allocated by the first step that accumulates and
  // kept sized to the count from then on; grad2d_abs likewise, by the first step that accumulates
  // it.
  bool adc_stats_in_use() const { return grad2d.capacity() > 0; }
  bool grad2d_abs_in_use() const { return grad2d_abs.capacity() > 0; }
  void reset_adc_stats();  // grad2d and the counts, and grad2d_abs where in use
  void reset_grad2d_abs();
  adc::Stats adc_stats() const;
  void set_adc_stats(const adc::Stats& st);

  // Mip-Splatting's 3D filter: recomputes the variances from these training cameras.
  void update_filter3d(std::span<const Camera> cameras);
  // The variances for the projection, or null without a filter; an error when a refine tick
  // changed the splats since the last update_filter3d.
  const float* filter3d() const;

  // The groups' pointers and widths for the refine kernels.
  ModelSlots slots();
  // `size` floats with at least `like`'s capacity (geometric growth past it) and a zero tail;
  // [0, size) is for the caller to write.
  DeviceBuffer<float> fresh_buffer(const DeviceBuffer<float>& like, std::size_t size);

  // The SH coefficients' gradients, the largest array (48 floats a splat at degree 3), exist only
  // once a step sums them (a batch of views, or several ranks): a one-view step on one GPU updates
  // the SH coefficients inside the projection backward (ShAdam) and never forms them. From then on
  // they follow the count like the other arrays; they are never freed again (a step in flight may
  // still read them).
  void use_sh_grads();
  bool sh_grads_in_use() const { return sh_grads_; }
  // Whether array g of G is held at the model's count: every one but unused SH gradients.
  bool holds(const Groups& G, int g) const { return &G != &grads || g != 4 || sh_grads_; }

  int n = 0, sh_degree = 0;
  std::int64_t adam_step = 0;
  Groups params, grads, m, v;
  DeviceBuffer<float> grad2d;            // [N] ADC: gradient-norm sums since the last tick
  DeviceBuffer<std::int32_t> vis_count;  // [N] ADC: visible steps since the last tick
  DeviceBuffer<float> grad2d_abs;        // [N] ADC: sums of AbsGS's statistic (adc::Stats)
  DeviceAppearance appearance;
  DevicePose pose;
  // Counts changes of the buffers or the count (upload, refine ticks, a resized filter): a
  // captured step graph holds their pointers.
  long generation = 0;

 private:
  // cudaMemcpy from pageable memory may return before the copy lands; kernels on the stream must
  // not overtake it.
  void uploaded() { syncs_.device("upload"); }

  cudaStream_t stream_;
  SyncLog& syncs_;
  bool sh_grads_ = false;                       // use_sh_grads
  bool filter_on_ = false;                      // set by upload (with variances) or update_filter3d
  DeviceBuffer<float> filter3d_;                // [N] variances
  DeviceBuffer<CameraParams> filter_cams_;      // the training cameras of the last update
  std::vector<CameraParams> filter_cams_host_;  // the same, to upload only when they change
  DeviceBuffer<unsigned> filter_fallback_{1};
};

}  // namespace splat::cuda
