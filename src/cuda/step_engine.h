#pragma once
// The step engine: every stage of a training step on one stream (render, loss, backward, the
// ranks' all-reduce, Adam, MCMC noise, ADC statistics), submitted per kernel, chained or as a
// replayed CUDA graph, with or without a second step in flight; the losses come home through a
// ring of pinned slots. step_engine.cpp describes the modes.
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cuda/adam_cuda.h"
#include "cuda/device_model.h"
#include "cuda/mcmc_cuda.h"
#include "cuda/renderer.h"
#include "cuda/training_images.h"
#include "distributed/communicator.h"
#include "engine/backend.h"
#include "engine/backend_config.h"

namespace splat::cuda {

// What a replayed graph reads from device memory: everything of a step that changes every step.
struct StepScalars {
  CameraParams cam;
  AdamScalars adam;
  NoiseScalars noise;
  int image = 0;       // the training image, whose appearance transform the step applies
  double pose_lr = 0;  // train.pose_opt: StepSettings::lr.pose
};

// Everything a captured graph bakes in besides StepScalars: the step's plan and the shape of the
// model, view and target. When any of it changes, the graph is captured again. `generation` is
// DeviceModel::generation.
struct GraphKey {
  StepPlan plan;
  long generation = -1;
  int n = 0, capacity = 0, width = 0, height = 0;
  const float* filter3d = nullptr;  // the 3D filter's buffer, or null
  int target_channels = 0;
  bool target_mask = false;
  float target_background[3] = {};
  bool appearance = false;  // the model has per-image transforms
  bool pose = false;        // the model has per-image pose corrections
  bool operator==(const GraphKey&) const = default;
};

class StepEngine {
 public:
  StepEngine(const BackendConfig& cfg,
             cudaStream_t stream,
             SyncLog& syncs,
             StageTimer& timer,
             Renderer& renderer,
             DeviceModel& model,
             TrainingImages& images);
  ~StepEngine();
  StepEngine(const StepEngine&) = delete;
  StepEngine& operator=(const StepEngine&) = delete;

  // Backend::step and Backend::collect_losses.
  void step(std::span<const BatchView> views, const StepSettings& s);
  void collect_losses(std::vector<StepResult>& out, bool wait);
  // Nothing in flight afterwards, every queued step retired (those abandoned for an overflow
  // queued again and finished).
  void drain();
  // The proof the model's buffers may change: the stream is idle and no step is queued.
  void assert_idle(const char* before) const;

  // Drains, then takes the ranks' collectives; with several ranks, no graph and no pipelining.
  void set_communicator(dist::Communicator& comm);
  dist::Communicator& communicator() const { return *comm_; }

  // The execution paths that ran and what they cost (Backend::report; the parity tests read them).
  void report(std::vector<std::pair<std::string, double>>& r) const;
  std::size_t bytes() const;  // device bytes held
 private:
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

  void submit(Pending p);
  void make_room();
  void retire_front();
  void recover();
  void run_step(Pending& p, bool from_device);
  // Whether the step sums gradients (a batch of views, or several ranks): then Adam takes the SH
  // coefficients from their gradient array; else the projection backward updates them (ShAdam).
  bool sums_gradients(const Pending& p) const;
  void view_pass(const ViewRef& view,
                 std::size_t k,
                 const StepSettings& s,
                 Sizing sizing,
                 bool from_device,
                 int& isect_count,
                 const ShAdam* sh_adam);
  // backend.timing: adds this view's workload to work_ (cuda/render_work.h), after its backward.
  void add_work(const Camera& cam,
                const StepSettings& s,
                const ForwardState& fwd,
                int target_channels,
                const ShAdam* sh_adam);
  // The model's five groups, then the appearance transforms (no elements when off).
  std::array<AdamGroup, 6> adam_groups(const StepSettings& s);
  void run_graph(Pending& p);

  const bool auto_submission_, auto_pipelining_;
  Submission submission_;
  int depth_;  // steps that may run at once: 1, or 2 with depth2 pipelining
  const bool deterministic_;
  dist::Communicator* comm_ = &dist::single_process();
  cudaStream_t stream_;
  SyncLog& syncs_;
  StageTimer& timer_;
  Renderer& renderer_;
  DeviceModel& model_;
  TrainingImages& images_;

  Pinned<Slot> ring_{kSlots};
  std::array<cudaEvent_t, kSlots> done_events_{};
  std::deque<Pending> pending_;  // queued steps, oldest first
  std::vector<StepResult> ready_;
  int next_slot_ = 0;
  Groups view_grads_;  // batches: the gradients of a view after the first, added into grads
  DeviceBuffer<float> view_sums_{2 * std::size_t(kMaxViews)};  // [views, 2] each view's loss sums
  // train.appearance: the transformed render the loss sees, and the transform's partial sums.
  DeviceBuffer<float> compensated_;
  DeviceBuffer<double> appearance_sums_;
  // train.pose_opt: the view's corrected camera, the backward's per-splat terms of d loss /
  // d [R' | t'] and their partial sums (cuda/pose_cuda.h).
  DeviceBuffer<CameraParams> posed_cam_{1};
  DeviceBuffer<float> pose_terms_;
  DeviceBuffer<double> pose_sums_;
  // Graph mode.
  DeviceBuffer<StepScalars> scalars_{1};
  cudaGraphExec_t graph_ = nullptr;
  GraphKey graph_key_, eager_key_;
  // Report figures.
  double isect_sum_ = 0;  // intersections over all retired steps
  long steps_ = 0, bounded_steps_ = 0, overflows_ = 0, eager_steps_ = 0, captures_ = 0,
       launches_ = 0, deterministic_steps_ = 0, sh_adam_steps_ = 0, appearance_steps_ = 0,
       pose_steps_ = 0;
  int max_in_flight_ = 0;
  // backend.timing: the workload of the timed steps, summed over work_steps_ steps (the report
  // gives the means per step as work.*; tools/bench/roofline.py sets the stage times against them).
  std::map<std::string, double> work_;
  long work_steps_ = 0;
};

}  // namespace splat::cuda
