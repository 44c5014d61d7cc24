// The step engine (cuda/step_engine.h): every stage of a training step on one stream, submitted in
// one of three ways (backend.submission) with or without pipelining (backend.pipelining); DESIGN.md
// section 4.
//   per_kernel: a host wait after every stage.
//   chained: the kernels queued back to back; one wait per step, for the intersection count that
//     sizes the per-intersection buffers.
//   graph: the step captured once as a CUDA graph and replayed; the values that change from step
//     to step (camera, learning rates, bias corrections, noise seed, target image) are copied to
//     fixed device memory before each launch. A new shape (splat count, image size, active SH
//     degree, intersection capacity, ...) runs once eagerly, sizing every buffer, and is captured
//     at its next step.
// Graph mode and depth2 pipelining have no wait inside a step: the intersection buffers are
// bounded (Sizing::Bounded), and a step whose count overflows them is abandoned on the GPU (the
// abort flag: Adam, noise and ADC statistics skip it, and every step queued after it) and queued
// again by the host with more room, so the history of losses and parameters is that of a run
// without overflow. The loss, the count and the flag come back through pinned memory, read when
// the step's event has passed.
#include "cuda/step_engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/accumulate.h"
#include "cuda/adam_cuda.h"
#include "cuda/adc_cuda.h"
#include "cuda/appearance_cuda.h"
#include "cuda/loss_cuda.h"
#include "cuda/mcmc_cuda.h"
#include "cuda/pose_cuda.h"
#include "distributed/communicator.h"

namespace splat::cuda {

StepEngine::StepEngine(const BackendConfig& cfg,
                       cudaStream_t stream,
                       SyncLog& syncs,
                       StageTimer& timer,
                       Renderer& renderer,
                       DeviceModel& model,
                       TrainingImages& images)
    : auto_submission_(cfg.submission == Submission::Auto),
      auto_pipelining_(cfg.pipelining == Pipelining::Auto),
      submission_(resolved(cfg.submission, cfg.timing)),
      depth_(resolved(cfg.pipelining, submission_, cfg.timing) == Pipelining::Depth2 ? 2 : 1),
      deterministic_(cfg.deterministic),
      stream_(stream),
      syncs_(syncs),
      timer_(timer),
      renderer_(renderer),
      model_(model),
      images_(images) {
  for (auto& e : done_events_)
    SPLAT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  if (submission_ == Submission::PerKernel) timer_.sync_each_stage(&syncs_);
}

StepEngine::~StepEngine() {
  cudaStreamSynchronize(stream_);
  if (graph_) cudaGraphExecDestroy(graph_);
  for (auto& e : done_events_) cudaEventDestroy(e);
}

// Several ranks (a GPU communicator, cuda/nccl.h): the step's gradients and loss sums are
// all-reduced on the stream before Adam, the ADC statistics before a refine decides. Every rank
// must issue the same collectives in the same order and finish every step it starts, so no graph
// capture and no abandoned steps: auto modes become chained and off, explicit ones are refused.
void StepEngine::set_communicator(dist::Communicator& comm) {
  if (comm.size() > 1 && !comm.reduces_device_buffers())
    throw Error("the cuda backend cannot train on " + std::to_string(comm.size()) +
                " ranks: it has no gradient reduction for the " + comm.name() +
                " communicator (backend.type = \"cpu\" reduces host gradients over MPI)");
  drain();
  comm_ = &comm;
  if (comm.size() == 1) return;
  if ((submission_ == Submission::Graph && !auto_submission_) || (depth_ > 1 && !auto_pipelining_))
    throw Error("cuda backend on " + std::to_string(comm.size()) +
                " ranks: backend.submission = \"" + std::string(to_string(submission_)) +
                "\" and backend.pipelining = \"" + (depth_ > 1 ? "depth2" : "off") +
                "\" cannot carry collectives; use chained and off (or auto)");
  if (submission_ == Submission::Graph) submission_ = Submission::Chained;
  depth_ = 1;
}

// The views' gradients are summed (the first view's backward writes the model's grads, later ones
// write view_grads_, added in), Adam scales the sum by 1 / batch_size, and the regularizers, once
// per step, are added batch_size times as large so they survive that scaling unchanged.
void StepEngine::step(std::span<const BatchView> views, const StepSettings& s) {
  if (views.empty()) throw Error("cuda backend: a step needs at least one view");
  if (views.size() > std::size_t(kMaxViews))
    throw Error("cuda backend: " + std::to_string(views.size()) + " views in one step; at most " +
                std::to_string(kMaxViews) + " per GPU");
  if (views.size() > 1 && submission_ == Submission::Graph && auto_submission_) {
    drain();  // auto means chained for batches (engine/backend_config.h); nothing queued may see
              // the switch
    submission_ = Submission::Chained;
  }
  if (views.size() > 1 && submission_ == Submission::Graph)
    throw Error(
        "cuda backend: backend.submission = \"graph\" replays one view per step; a batch of " +
        std::to_string(views.size()) + " views needs chained or per_kernel");
  if (model_.pose.on() && (views.size() > 1 || comm_->size() > 1))
    throw Error("cuda backend: train.pose_opt trains one view per step on one GPU, not " +
                std::to_string(views.size()) + " views on " + std::to_string(comm_->size()) +
                " ranks");
  if (comm_->size() > 1)
    for (const BatchView& v : views)
      if (v.camera->width != views[0].camera->width || v.camera->height != views[0].camera->height)
        throw Error("cuda backend on several ranks: the views of a step must have one image size");
  Pending p{};
  for (const BatchView& v : views) {
    const DeviceImage& target = images_.at(v.image);
    if (target.width != v.camera->width || target.height != v.camera->height)
      throw Error("cuda backend: image " + std::to_string(v.image) +
                  " size does not match its camera");
    p.views.push_back({*v.camera, v.image});
  }
  p.settings = s;
  p.adam_step = model_.adam_step + 1;
  submit(std::move(p));
}

void StepEngine::collect_losses(std::vector<StepResult>& out, bool wait) {
  if (wait) {
    drain();
    timer_.harvest_all();
  }
  while (!pending_.empty() && cudaEventQuery(done_events_[pending_.front().slot]) == cudaSuccess)
    retire_front();
  out.insert(out.end(), ready_.begin(), ready_.end());
  ready_.clear();
}

void StepEngine::submit(Pending p) {
  make_room();
  int unfinished = 1;
  for (const Pending& q : pending_)
    unfinished += cudaEventQuery(done_events_[q.slot]) == cudaErrorNotReady;
  max_in_flight_ = std::max(max_in_flight_, unfinished);
  p.slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % kSlots;
  model_.adam_step = p.adam_step;
  if (sums_gradients(p)) model_.use_sh_grads();  // before any capture: it may allocate
  if (submission_ == Submission::Graph)
    run_graph(p);
  else
    run_step(p, false);
  Slot* slot = ring_.get() + p.slot;
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(slot->sums, view_sums_.data(),
                                   p.views.size() * sizeof slot->sums[0], cudaMemcpyDeviceToHost,
                                   stream_));
  if (bounded())
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(slot->status, renderer_.status(), sizeof slot->status,
                                     cudaMemcpyDeviceToHost, stream_));
  SPLAT_CUDA_CHECK(cudaEventRecord(done_events_[p.slot], stream_));
  pending_.push_back(std::move(p));
}

// Before a step is queued: a free ring entry, and with bounded sizing at most depth - 1 steps
// still running (off: none; depth2: one). Exact sizing waits inside the step instead.
void StepEngine::make_room() {
  auto unfinished = [&] {
    int k = 0;
    for (const Pending& q : pending_)
      k += cudaEventQuery(done_events_[q.slot]) == cudaErrorNotReady;
    return k;
  };
  while (!pending_.empty() &&
         (int(pending_.size()) == kSlots || (bounded() && unfinished() >= depth_))) {
    syncs_.event(done_events_[pending_.front().slot], bounded() ? "step_done" : "loss_ring_full");
    retire_front();
  }
}

// The oldest queued step, whose event has passed: its loss joins ready_, or, if it was
// abandoned for an intersection overflow, it and every step after it are queued again.
void StepEngine::retire_front() {
  const Pending& p = pending_.front();
  const Slot& slot = ring_.get()[p.slot];
  if (bounded() && slot.status[1]) return recover();
  const double lambda = p.settings.ssim_lambda, views = double(p.views.size());
  const LossKind kind = p.settings.loss;
  // The data term's mean is an L1 to report where it is mean |d| (not mean d^2).
  const double l1_part = loss_terms(kind).data == DataTerm::Abs ? 1.0 : 0.0;
  StepResult r;             // the mean over the step's views
  if (comm_->size() > 1) {  // slot 0 holds the sums over all ranks' views, all of one size
    const double elements =
        double(p.views[0].cam.width) * p.views[0].cam.height * 3 * p.settings.batch_size;
    const double data = double(slot.sums[0][0]) / elements;
    r.l1 = l1_part * data;
    r.ssim = double(slot.sums[0][1]) / elements;
    r.loss = combined_loss(kind, lambda, data, r.ssim);
  }
  for (std::size_t k = 0; comm_->size() == 1 && k < p.views.size(); ++k) {
    const double elements = double(p.views[k].cam.width) * p.views[k].cam.height * 3;
    const double data = double(slot.sums[k][0]) / elements,
                 ssim = double(slot.sums[k][1]) / elements;
    r.l1 += l1_part * data / views;
    r.ssim += ssim / views;
    r.loss += combined_loss(kind, lambda, data, ssim) / views;
  }
  ready_.push_back(r);
  isect_sum_ += bounded() ? double(slot.status[0]) : double(p.isect_count);
  ++steps_;
  pending_.pop_front();
}

// The front step overflowed its intersection buffers. The flag stays raised, so every step
// queued after it skipped its update too: wait for them, make room for the largest count any
// of them needed (they all counted), lower the flag and queue them all again, in order.
void StepEngine::recover() {
  syncs_.stream(stream_, "overflow_drain");
  std::vector<Pending> redo(pending_.begin(), pending_.end());
  pending_.clear();
  int needed = 0;
  for (const Pending& p : redo) needed = std::max(needed, ring_.get()[p.slot].status[2]);
  renderer_.reserve(needed + needed / 8 + 1024);
  renderer_.clear_abort();
  ++overflows_;
  for (Pending& p : redo) submit(std::move(p));
}

bool StepEngine::sums_gradients(const Pending& p) const {
  return p.views.size() > 1 || comm_->size() > 1;
}

// The work of one step on stream_. from_device: the camera, Adam and noise scalars come from
// scalars_ and the target from the staged image (graph mode, eager or captured; one view).
void StepEngine::run_step(Pending& p, bool from_device) {
  const StepSettings& s = p.settings;
  const Sizing sizing = bounded() ? Sizing::Bounded : Sizing::Exact;
  const int* abort = sizing == Sizing::Bounded ? renderer_.abort_flag() : nullptr;
  bounded_steps_ += sizing == Sizing::Bounded;
  p.isect_count = 0;
  // The gradients hold the sum over the batch's views (of every rank's, once a communicator has
  // all-reduced them): Adam takes their mean, and adds MCMC's regularizers batch_size times. A
  // step of one view on one GPU needs no sum, so the projection backward applies Adam to the SH
  // coefficients where it forms their gradients (ShAdam, same bits), and Adam's own launch takes
  // the other four groups.
  const float batch = float(s.batch_size);
  std::array<AdamGroup, 6> groups = adam_groups(s);
  const bool sh_in_backward = !sums_gradients(p);
  const ShAdam sh_adam{groups[4], 4,
                       adam_scalars(groups.data(), int(groups.size()), p.adam_step, 1.0f / batch),
                       from_device ? &scalars_.data()->adam : nullptr, abort};
  DeviceAppearance& app = model_.appearance;
  if (app.on()) app.grads.zero(stream_);  // the views add their images' gradients
  for (std::size_t k = 0; k < p.views.size(); ++k)
    view_pass(p.views[k], k, s, sizing, from_device, p.isect_count,
              sh_in_backward ? &sh_adam : nullptr);
  deterministic_steps_ += deterministic_;
  sh_adam_steps_ += sh_in_backward;
  appearance_steps_ += app.on();
  pose_steps_ += model_.pose.on();
  if (timer_.enabled() && sizing == Sizing::Exact) {
    ++work_steps_;
    work_["work.noise_splats"] += s.noise ? double(model_.n) : 0.0;
  }

  if (comm_->size() > 1) {  // every rank's views: gradient sums, and loss sums in view 0's slot
    timer_.begin("allreduce", stream_);
    for (auto& g : model_.grads.g)
      comm_->allreduce_sum_device(g.data(), g.size(), stream_, "gradient all-reduce");
    if (app.on())
      comm_->allreduce_sum_device(app.grads.data(), app.grads.size(), stream_,
                                  "appearance gradient all-reduce");
    for (std::size_t k = 1; k < p.views.size(); ++k)
      add_in_place(view_sums_.data(), view_sums_.data() + 2 * k, 2, stream_);
    comm_->allreduce_sum_device(view_sums_.data(), 2, stream_, "loss all-reduce");
    timer_.end(stream_);
  }
  // The launch takes the groups before the SH coefficients' (those already updated in the
  // backward), or all five; the appearance transforms, when on, ride along as group 5.
  if (sh_in_backward && app.on()) groups[4].n = 0;
  const int launched = app.on() ? 6 : sh_in_backward ? 4 : 5;
  timer_.begin("adam", stream_);
  adam_step(groups.data(), launched, p.adam_step, stream_, 1.0f / batch,
            from_device ? &scalars_.data()->adam : nullptr, abort);
  if (app.on()) appearance_recenter(app.params.data(), app.images(), stream_, abort);
  timer_.end(stream_);

  if (s.noise) {  // MCMC exploration noise on the updated parameters
    timer_.begin("noise", stream_);
    mcmc_inject_noise(model_.n, model_.params.in(), model_.params.g[0].data(),
                      {{float(s.noise_scale), s.noise_seed},
                       from_device ? &scalars_.data()->noise : nullptr,
                       abort},
                      stream_);
    timer_.end(stream_);
  }
  timer_.end_step();
}

// One view of a step: forward, loss (its sums to view_sums_[k]), backward into the step's
// gradients (with sh_adam, the SH coefficients updated instead), ADC statistics.
void StepEngine::view_pass(const ViewRef& view,
                           std::size_t k,
                           const StepSettings& s,
                           Sizing sizing,
                           bool from_device,
                           int& isect_count,
                           const ShAdam* sh_adam) {
  const Camera& cam = view.cam;
  const int* abort = sizing == Sizing::Bounded ? renderer_.abort_flag() : nullptr;
  // train.pose_opt: the view renders from its image's corrected camera, which the projection
  // reads from posed_cam_ (the uncorrected one comes from the scalars in graph mode).
  const CameraParams* base_cam = from_device ? &scalars_.data()->cam : nullptr;
  DevicePose& dp = model_.pose;
  const PoseView pose{dp.params.data(), dp.m.data(),
                      dp.v.data(),      dp.steps.data(),
                      view.image,       from_device ? &scalars_.data()->image : nullptr};
  if (dp.on()) {
    timer_.begin("pose", stream_);
    pose_camera(pose, CameraParams::from(cam), base_cam, posed_cam_.data(), stream_);
    timer_.end(stream_);
  }
  const ForwardState fwd =
      renderer_.forward(model_.params.in(), model_.n, sh_coeffs(model_.sh_degree), cam, s.raster,
                        sizing, dp.on() ? posed_cam_.data() : base_cam, model_.filter3d());
  if (sizing == Sizing::Exact) isect_count += fwd.intersections;

  PerPixel& px = renderer_.pixels();
  const DeviceImage& target = from_device ? images_.staged() : images_.fetch(view.image);
  // train.appearance: the loss sees the render through the image's transform, and its gradient
  // goes back through it (the transform's own into model_.appearance.grads).
  const std::size_t pixels = std::size_t(cam.width) * cam.height;
  const AppearanceView app{model_.appearance.params.data(), model_.appearance.grads.data(),
                           view.image, from_device ? &scalars_.data()->image : nullptr};
  const float* seen = px.image;
  if (model_.appearance.on()) {
    compensated_.resize(3 * pixels);
    appearance_sums_.resize(appearance_scratch_doubles(pixels));
    timer_.begin("appearance", stream_);
    appearance_forward(app, px.image, compensated_.data(), pixels, stream_);
    timer_.end(stream_);
    seen = compensated_.data();
  }
  const LossParams lp{cam.width, cam.height, float(s.ssim_lambda), s.loss};
  timer_.begin("loss", stream_);
  photometric_loss(lp, seen, LossTarget{target.pixels.data(), target.format, target.norm.data()},
                   {px.v_image, px.sums, px.loss_scratch}, stream_);
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(view_sums_.data() + 2 * k, px.sums, 2 * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream_));
  timer_.end(stream_);
  if (model_.appearance.on()) {
    timer_.begin("appearance", stream_);
    appearance_backward(app, px.image, px.v_image, pixels, float(2 * s.appearance_reg),
                        appearance_sums_.data(), stream_);
    timer_.end(stream_);
  }

  const bool stats = s.accumulate_grad2d && model_.n > 0;
  const bool abs_stats = stats && s.accumulate_grad2d_abs;  // AbsGS's statistic too
  if (dp.on()) pose_terms_.resize(std::size_t(model_.n) * kPoseViewGrads);
  if (k == 0) {
    renderer_.backward(model_.params.in(), fwd, {px.v_image, nullptr}, model_.grads.out(),
                       deterministic_, sh_adam, abs_stats, dp.on() ? pose_terms_.data() : nullptr);
  } else {  // project_bwd overwrites its output: this view's gradients go aside, then are added
    for (int g = 0; g < 5; ++g) view_grads_.g[g].resize(model_.grads.g[g].size());
    renderer_.backward(model_.params.in(), fwd, {px.v_image, nullptr}, view_grads_.out(),
                       deterministic_, nullptr, abs_stats);
    timer_.begin("batch_accumulate", stream_);
    for (int g = 0; g < 5; ++g)
      add_in_place(model_.grads.g[g].data(), view_grads_.g[g].data(), model_.grads.g[g].size(),
                   stream_);
    timer_.end(stream_);
  }

  if (dp.on()) {  // one view per step (step() refuses more): its image's correction's update
    pose_sums_.resize(pose_scratch_doubles(model_.n));
    timer_.begin("pose", stream_);
    pose_update(pose, CameraParams::from(cam), base_cam, pose_terms_.data(), model_.n, s.lr.pose,
                from_device ? &scalars_.data()->pose_lr : nullptr, s.pose_reg, pose_sums_.data(),
                abort, stream_);
    timer_.end(stream_);
  }

  if (timer_.enabled() && sizing == Sizing::Exact)
    add_work(cam, s, fwd, target.format.channels, k == 0 ? sh_adam : nullptr);

  if (stats) {  // ADC statistics from this view's screen-space gradients
    if (model_.grad2d.size() != std::size_t(model_.n))
      model_.reset_adc_stats();  // first use since the count changed
    if (abs_stats && model_.grad2d_abs.size() != std::size_t(model_.n))
      model_.reset_grad2d_abs();  // first use
    timer_.begin("adc_stats", stream_);
    const PerSplat& sp = renderer_.splats();
    adc_accumulate(model_.n, sp.proj.radii, sp.v.means2d, sp.v.means2d_abs, 0.5f * float(cam.width),
                   0.5f * float(cam.height),
                   {model_.grad2d.data(), model_.vis_count.data(), model_.grad2d_abs.data()},
                   stream_, abort);
    timer_.end(stream_);
  }
}

// The device counts cost a host wait, which timing's submission (per_kernel) has after every
// stage anyway; the rest is known on the host.
void StepEngine::add_work(const Camera& cam,
                          const StepSettings& s,
                          const ForwardState& fwd,
                          int target_channels,
                          const ShAdam* sh_adam) {
  const std::array<double, kRenderWorkSums> c = renderer_.count_work(fwd);
  const double n = double(model_.n), pixels = double(cam.width) * double(cam.height);
  const double visible = c[kVisible];
  work_["work.views"] += 1;
  work_["work.splats"] += n;
  work_["work.sh_coeffs"] += n * sh_coeffs(model_.sh_degree);  // stored, per channel
  work_["work.visible"] += visible;
  work_["work.visible_sh_coeffs"] += visible * sh_coeffs(s.raster.sh_degree);  // active ones
  // The splats whose SH coefficients the projection backward updates with Adam (ShAdam).
  work_["work.sh_adam_splats"] += !sh_adam ? 0.0 : sh_adam->group.sparse ? c[kShLive] : n;
  work_["work.filter3d_splats"] += model_.filter3d() ? n : 0.0;
  work_["work.pixels"] += pixels;
  work_["work.tiles"] += double(fwd.raster.params.grid.count());
  work_["work.target_bytes"] += pixels * target_channels;
  work_["work.ssim_pixels"] += loss_terms(s.loss).ssim ? pixels : 0.0;
  work_["work.list_visits"] += c[kListVisits];
  work_["work.blend_visits"] += c[kBlendVisits];
  work_["work.boundary_reads"] += c[kBoundaryReads];
  work_["work.adc_splats"] += s.accumulate_grad2d ? n : 0.0;
  work_["work.adc_visible"] += s.accumulate_grad2d ? visible : 0.0;
}

std::array<AdamGroup, 6> StepEngine::adam_groups(const StepSettings& s) {
  const int K = sh_coeffs(model_.sh_degree);
  std::array<AdamGroup, 6> groups;
  const float lrs[5] = {float(s.lr.means), float(s.lr.log_scales), float(s.lr.quats),
                        float(s.lr.opacity), float(s.lr.sh0)};
  for (int i = 0; i < 5; ++i)
    groups[i] = {model_.params.g[i].data(),
                 model_.grads.g[i].data(),
                 model_.m.g[i].data(),
                 model_.v.g[i].data(),
                 model_.params.g[i].size(),
                 lrs[i],
                 i == 4 ? K : 0,
                 float(s.lr.shN)};
  groups[4].sparse = s.sparse_sh_adam;
  DeviceAppearance& app = model_.appearance;
  groups[5] = {app.params.data(), app.grads.data(),  app.m.data(),
               app.v.data(),      app.params.size(), float(s.lr.appearance)};
  // MCMC's L1 terms, opacity_reg * mean(sigmoid(raw_opacity)) and scale_reg *
  // mean(exp(log_scales)), part of the loss Adam sees: their gradients, once per view of the batch.
  const double batch = double(float(s.batch_size));
  if (s.opacity_reg > 0 && model_.n > 0)
    groups[3].reg = AdamReg::SigmoidSlope,
    groups[3].reg_coef = batch * s.opacity_reg / double(model_.n);
  if (s.scale_reg > 0 && model_.n > 0)
    groups[1].reg = AdamReg::Exp,
    groups[1].reg_coef = batch * s.scale_reg / double(3 * std::size_t(model_.n));
  return groups;
}

// Graph mode: this step's scalars and target go to fixed device memory, then the captured
// graph of its shape replays; a shape seen for the first time runs eagerly, and is captured
// at its second step (by then every buffer has its size, so nothing allocates in a capture).
void StepEngine::run_graph(Pending& p) {
  const StepSettings& s = p.settings;
  const ViewRef& view = p.views.at(0);  // step() lets only one view through in graph mode
  const DeviceImage& target = images_.at(view.image);
  Slot& slot = ring_.get()[p.slot];
  const std::array<AdamGroup, 6> groups = adam_groups(s);
  slot.scalars = {CameraParams::from(view.cam),
                  adam_scalars(groups.data(), int(groups.size()), p.adam_step),
                  {float(s.noise_scale), s.noise_seed},
                  view.image,
                  s.lr.pose};
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(scalars_.data(), &slot.scalars, sizeof(StepScalars),
                                   cudaMemcpyHostToDevice, stream_));
  images_.stage(view.image);

  GraphKey key;
  key.plan = s;  // the whole plan: a setting of StepPlan cannot be left out
  key.generation = model_.generation;
  key.n = model_.n;
  key.capacity = renderer_.capacity();
  key.width = view.cam.width;
  key.height = view.cam.height;
  key.filter3d = model_.filter3d();
  key.target_channels = target.format.channels;
  key.target_mask = target.format.mask;
  for (int c = 0; c < 3; ++c) key.target_background[c] = target.format.background[c];
  key.appearance = model_.appearance.on();
  key.pose = model_.pose.on();
  if (key.plan.accumulate_grad2d &&
      (model_.grad2d.size() != std::size_t(model_.n) ||
       (key.plan.accumulate_grad2d_abs && model_.grad2d_abs.size() != std::size_t(model_.n))))
    key.generation = -2;  // stats not sized yet

  if (graph_ && key == graph_key_) {
    SPLAT_CUDA_CHECK(cudaGraphLaunch(graph_, stream_));
    ++launches_;
    bounded_steps_ += 1;
    deterministic_steps_ += deterministic_;
    appearance_steps_ += key.appearance;
    pose_steps_ += key.pose;
    return;
  }
  if (graph_) {
    SPLAT_CUDA_CHECK(cudaGraphExecDestroy(graph_));
    graph_ = nullptr;
  }
  if (!(key == eager_key_)) {
    eager_key_ = key;
    ++eager_steps_;
    run_step(p, true);
    return;
  }
  cudaGraph_t graph = nullptr;
  SPLAT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
  try {
    run_step(p, true);
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  SPLAT_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  const cudaError_t made = cudaGraphInstantiate(&graph_, graph, 0);
  cudaGraphDestroy(graph);
  SPLAT_CUDA_CHECK(made);
  graph_key_ = key;
  ++captures_;
  SPLAT_CUDA_CHECK(cudaGraphLaunch(graph_, stream_));
  ++launches_;
}

// Nothing in flight afterwards, every queued step retired (those abandoned for an overflow
// queued again and finished).
void StepEngine::drain() {
  do {
    syncs_.stream(stream_, "drain");
    while (!pending_.empty() && cudaEventQuery(done_events_[pending_.front().slot]) == cudaSuccess)
      retire_front();
  } while (!pending_.empty());
}

void StepEngine::assert_idle(const char* before) const {
  if (cudaStreamQuery(stream_) != cudaSuccess || !pending_.empty())
    throw Error(std::string("cuda backend: work still in flight after the drain before ") + before);
}

std::size_t StepEngine::bytes() const {
  std::size_t b = view_sums_.capacity_bytes() + scalars_.capacity_bytes() +
                  compensated_.capacity_bytes() + appearance_sums_.capacity_bytes() +
                  posed_cam_.capacity_bytes() + pose_terms_.capacity_bytes() +
                  pose_sums_.capacity_bytes();
  for (const auto& buffer : view_grads_.g) b += buffer.capacity_bytes();
  return b;
}

void StepEngine::report(std::vector<std::pair<std::string, double>>& r) const {
  if (steps_ > 0) r.push_back({"isect.mean_per_step", isect_sum_ / double(steps_)});
  r.push_back({"engine.submission_" + std::string(to_string(submission_)), 1});
  r.push_back({"engine.steps_retired", double(steps_)});
  r.push_back({"engine.max_in_flight", double(max_in_flight_)});
  r.push_back({"engine.bounded_steps", double(bounded_steps_)});
  r.push_back({"engine.isect_overflows", double(overflows_)});
  r.push_back({"engine.graph_eager_steps", double(eager_steps_)});
  r.push_back({"engine.graph_captures", double(captures_)});
  r.push_back({"engine.graph_launches", double(launches_)});
  r.push_back({"engine.deterministic_steps", double(deterministic_steps_)});
  r.push_back({"engine.sh_adam_in_backward_steps", double(sh_adam_steps_)});
  r.push_back({"engine.appearance_steps", double(appearance_steps_)});
  r.push_back({"engine.pose_steps", double(pose_steps_)});
  r.push_back({"images.streamed", double(images_.streamed())});
  for (const auto& [name, sum] : work_)
    if (work_steps_ > 0) r.push_back({name, sum / double(work_steps_)});
}

}  // namespace splat::cuda
