#pragma once
// The CUDA backend's class, private to its sources: backend.cpp (construction, communicator,
// render, report), backend_step.cpp (the step engine: submit, retire, overflow recovery, graph
// capture and replay; its header comment describes the submission modes), backend_refine.cpp
// (MCMC and ADC refine ticks) and backend_state.cpp (images, state, test hooks).
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cuda/adam.h"
#include "cuda/adc.h"
#include "cuda/backend.h"
#include "cuda/mcmc.h"
#include "cuda/renderer.h"
#include "dist/communicator.h"
#include "render/backend_config.h"
#include "render/target.h"

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
  // Slots past the live count read zero (set_state and mcmc_refine keep it so).
  void zero_tails(cudaStream_t stream) {
    for (auto& b : g) b.zero_tail(stream);
  }
};

// What a replayed graph reads from device memory: everything of a step that changes every step.
struct StepScalars {
  CameraParams cam;
  AdamScalars adam;
  NoiseScalars noise;
};

// Everything a captured graph bakes in besides StepScalars: when any of it changes, the graph is
// captured again. `generation` counts model buffer changes (set_state, refine ticks).
struct GraphKey {
  long generation = -1;
  int n = 0, capacity = 0, width = 0, height = 0, sh_degree = 0;
  bool antialiased = false, accumulate_grad2d = false, noise = false, target_mask = false;
  const float* filter3d = nullptr;  // the 3D filter's buffer, or null
  LossKind loss = LossKind::L1Ssim;
  int target_channels = 0;
  float background[3] = {}, target_background[3] = {}, ssim_lambda = 0;
  double opacity_reg = 0, scale_reg = 0;
  bool operator==(const GraphKey&) const = default;
};

class CudaBackend final : public Backend {
 public:
  // Construction, the communicator, renders and the report (backend.cpp).
  explicit CudaBackend(const BackendConfig& cfg);
  ~CudaBackend() override;

  static cudaStream_t new_stream() {
    cudaStream_t s;
    SPLAT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }

  std::string name() const override { return "cuda"; }
  void set_communicator(dist::Communicator& comm) override;
  Image render(const Camera& cam, const RasterSettings& rs) override;
  std::uint64_t peak_memory_bytes() const override { return memory_stats().peak; }
  std::vector<std::pair<std::string, double>> report() const override;

  // Images and state (backend_state.cpp).
  void set_images(const std::vector<const Image8*>& images) override;
  void set_state(const TrainState& s) override;
  // cudaMemcpy from pageable memory may return before the copy lands; kernels on stream_ must
  // not overtake it.
  void uploaded() { syncs_.device("upload"); }
  TrainState state() const override;
  Gaussians params() const override;
  std::uint64_t state_digest() const override;
  std::string non_finite_group() const override;
  std::size_t num_splats() const override { return std::size_t(n_); }

  // Steps (backend_step.cpp).
  void step(std::span<const BatchView> views, const StepSettings& s) override;
  void collect_losses(std::vector<StepResult>& out, bool wait) override;

  // Refine ticks (backend_refine.cpp).
  RefineStats mcmc_refine(const McmcRefineSettings& s) override;
  RefineStats adc_refine(const AdcRefineSettings& s) override;
  void adc_reset_opacity(float max_opacity) override;
  // Mip-Splatting's 3D filter (backend_state.cpp).
  void update_filter3d(std::span<const Camera> cameras) override;

  // Test hooks (backend_state.cpp), behind adc_stats, set_adc_stats, poison_scratch and
  // model_arrays in cuda/backend.h.
  adc::Stats stats() const;
  void set_stats(const adc::Stats& st);
  void poison();
  std::vector<DeviceArrayView> arrays() const;

 private:
  // A training image as stored on the host (core/image.h Image8); the loss kernels form the
  // target from its bytes.
  struct DeviceImage {
    int width = 0, height = 0;
    TargetFormat format;
    DeviceBuffer<std::uint8_t> pixels;  // [H, W, format.channels]
    DeviceBuffer<float> norm;           // [1]: H W / pixels the mask keeps (cuda/loss.h)
  };
  // A queued step, with what it takes to queue it again after an overflow.
  struct ViewRef {
    Camera cam;
    int image;
  };
  struct Pending {
    int slot = -1;  // ring entry of its readback (and of its scalars in graph mode)
    std::vector<ViewRef> views;
    StepSettings settings;
    std::int64_t adam_step = 0;  // the Adam step count after this step's update
    int isect_count = 0;         // exact sizing: the views' intersections, known when queued
  };
  static constexpr int kMaxViews = 64;
  // What comes home from a step, through pinned memory; the graph's scalars go the other way.
  struct Slot {
    float sums[kMaxViews][2];  // loss sums (l1, ssim) of each view
    std::int32_t status[3];    // bounded sizing: last view's count, abort flag, largest count
    StepScalars scalars;
  };
  static constexpr int kSlots = 4;

  // No wait may sit inside a step: graph capture, or a pipeline that queues the next step early.
  bool bounded() const { return submission_ == Submission::Graph || depth_ > 1; }

  // The step engine (backend_step.cpp).
  void submit(Pending p);
  void make_room();
  void retire_front();
  void recover();
  void run_step(Pending& p, bool from_device);
  void view_pass(const ViewRef& view,
                 std::size_t k,
                 const StepSettings& s,
                 Sizing sizing,
                 bool from_device,
                 int& isect_count,
                 const ShAdam* sh_adam);
  std::array<AdamGroup, 5> adam_groups(const StepSettings& s);
  void run_graph(Pending& p);
  void stage_target(const DeviceImage& target);
  void drain();

  // The 3D filter's variances for the projection, or null without one; an error when a refine
  // tick changed the splats since the last update_filter3d.
  const float* filter3d() const;

  // Refine tick helpers (backend_refine.cpp).
  void assert_idle(const char* before);
  // ADC statistics: one zeroed entry per live splat. Allocated by the first step that accumulates
  // and kept sized to the count from then on; called only with nothing in flight that reads them.
  bool adc_stats_in_use() const { return grad2d_.capacity() > 0; }
  void reset_adc_stats();
  DeviceBuffer<float> fresh_buffer(const DeviceBuffer<float>& like, std::size_t size);
  McmcSlots slots();

  const bool auto_submission_, auto_pipelining_;
  Submission submission_;
  int depth_;  // steps that may run at once: 1, or 2 with depth2 pipelining
  dist::Communicator* comm_ = &dist::single_process();  // the ranks' collectives (set_communicator)
  const bool deterministic_;
  cudaStream_t stream_ = nullptr;
  SyncLog syncs_;
  StageTimer timer_;
  Renderer renderer_;
  int n_ = 0, sh_degree_ = 0;
  std::int64_t adam_step_ = 0;
  Groups params_, grads_, m_, v_;
  ScratchGroup<McmcScratch, McmcSize> mcmc_scratch_;
  Pinned<std::int32_t> dead_host_{1};
  DeviceBuffer<float> grad2d_;            // [N] ADC: gradient-norm sums since the last tick
  DeviceBuffer<std::int32_t> vis_count_;  // [N] ADC: visible steps since the last tick
  ScratchGroup<AdcScratch, int> adc_scratch_;
  // Mip-Splatting's 3D filter: on when set_state or update_filter3d gave one.
  bool filter_on_ = false;
  DeviceBuffer<float> filter3d_;                // [N] variances
  DeviceBuffer<CameraParams> filter_cams_;      // the training cameras of the last update
  std::vector<CameraParams> filter_cams_host_;  // the same, to upload only when they change
  DeviceBuffer<unsigned> filter_fallback_{1};
  Pinned<std::int32_t> adc_totals_host_{kAdcTotals};
  std::vector<DeviceImage> images_;
  Pinned<Slot> ring_;
  std::array<cudaEvent_t, kSlots> done_events_{};
  std::deque<Pending> pending_;  // queued steps, oldest first
  std::vector<StepResult> ready_;
  int next_slot_ = 0;
  Groups view_grads_;  // batches: the gradients of a view after the first, added into grads_
  DeviceBuffer<float> view_sums_{2 * std::size_t(kMaxViews)};  // [views, 2] each view's loss sums
  // Graph mode.
  DeviceBuffer<StepScalars> scalars_{1};
  DeviceImage staged_;
  cudaGraphExec_t graph_ = nullptr;
  GraphKey graph_key_, eager_key_;
  long generation_ = 0;
  // Report figures.
  double isect_sum_ = 0;  // intersections over all retired steps
  long steps_ = 0, bounded_steps_ = 0, overflows_ = 0, eager_steps_ = 0, captures_ = 0,
       launches_ = 0, deterministic_steps_ = 0, sh_adam_steps_ = 0;
  int max_in_flight_ = 0;
};

}  // namespace splat::cuda
