// The CUDA backend: every stage of a training step on one stream, submitted in one of three ways
// (backend.submission) with or without pipelining (backend.pipelining); DESIGN.md section 4.
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
#include "cuda/backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <deque>
#include <limits>
#include <span>

#include "core/error.h"
#include "cuda/accumulate.h"
#include "cuda/adam.h"
#include "cuda/adc.h"
#include "cuda/loss.h"
#include "cuda/mcmc.h"
#include "cuda/renderer.h"
#include "dist/communicator.h"
#include "io/config.h"

namespace splat::cuda {

bool device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

namespace {

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
  GaussianPtrs in() const { return {g[0].data(), g[1].data(), g[2].data(), g[3].data(), g[4].data()}; }
  GaussianGradPtrs out() { return {g[0].data(), g[1].data(), g[2].data(), g[3].data(), g[4].data()}; }
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
  bool antialiased = false, accumulate_grad2d = false, noise = false, u8 = false;
  float background[3] = {}, ssim_lambda = 0;
  double opacity_reg = 0, scale_reg = 0;
  bool operator==(const GraphKey&) const = default;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendConfig& cfg)
      : auto_submission_(cfg.submission == Submission::Auto),
        auto_pipelining_(cfg.pipelining == Pipelining::Auto),
        submission_(resolved(cfg.submission, cfg.timing)),
        depth_(resolved(cfg.pipelining, submission_, cfg.timing) == Pipelining::Depth2 ? 2 : 1),
        deterministic_(cfg.deterministic),
        stream_(new_stream()),
        timer_(cfg.timing),
        renderer_(stream_, syncs_, timer_),
        ring_(kSlots) {
    for (auto& e : done_events_) SPLAT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    if (submission_ == Submission::PerKernel) timer_.sync_each_stage(&syncs_);
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    if (graph_) cudaGraphExecDestroy(graph_);
    for (auto& e : done_events_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
  }

  static cudaStream_t new_stream() {
    cudaStream_t s;
    SPLAT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }

  std::string name() const override { return "cuda"; }

  // Training images stay on the device: 8-bit when every value is exactly k/255, float otherwise.
  void set_images(const std::vector<const Image*>& images) override {
    drain();
    images_.clear();
    for (const Image* img : images) {
      if (img->channels != 3) throw Error("cuda backend: training images must be RGB");
      DeviceImage d;
      d.width = img->width;
      d.height = img->height;
      std::vector<std::uint8_t> bytes(img->data.size());
      bool exact = true;
      for (std::size_t i = 0; i < bytes.size() && exact; ++i) {
        const float v = img->data[i] * 255.0f;
        bytes[i] = std::uint8_t(std::lround(v));
        exact = float(bytes[i]) / 255.0f == img->data[i];
      }
      if (exact)
        d.u8.upload(bytes);
      else
        d.f32.upload(img->data);
      images_.push_back(std::move(d));
    }
    uploaded();
  }

  void set_state(const TrainState& s) override {
    drain();
    n_ = int(s.params.size());
    sh_degree_ = s.params.sh_degree;
    params_.upload(s.params);
    m_.upload(s.adam_m);
    v_.upload(s.adam_v);
    // Gradients are zero between steps (Adam clears them). Not an upload of anything: a pageable
    // cudaMemcpy can land after a zeroing queued on stream_ behind it.
    for (int g = 0; g < 5; ++g) {
      grads_.g[g].resize(params_.g[g].size());
      grads_.g[g].zero(stream_);
    }
    for (Groups* G : {&params_, &grads_, &m_, &v_}) G->zero_tails(stream_);
    adam_step_ = s.adam_step;
    if (adc_stats_in_use()) reset_adc_stats();
    ++generation_;
    uploaded();
  }

  // cudaMemcpy from pageable memory may return before the copy lands; kernels on stream_ must
  // not overtake it.
  void uploaded() { syncs_.device("upload"); }

  TrainState state() const override {
    const_cast<CudaBackend*>(this)->drain();
    TrainState s;
    for (Gaussians* g : {&s.params, &s.adam_m, &s.adam_v}) g->sh_degree = sh_degree_;
    params_.download(s.params);
    m_.download(s.adam_m);
    v_.download(s.adam_v);
    s.adam_step = adam_step_;
    return s;
  }

  std::size_t num_splats() const override { return std::size_t(n_); }

  // The views' gradients are summed (the first view's backward writes grads_, later ones write
  // view_grads_, added in), Adam scales the sum by 1 / batch_size, and the regularizers, once per
  // step, are added batch_size times as large so they survive that scaling unchanged.
  void step(std::span<const BatchView> views, const StepSettings& s) override {
    if (views.empty()) throw Error("cuda backend: a step needs at least one view");
    if (views.size() > std::size_t(kMaxViews))
      throw Error("cuda backend: " + std::to_string(views.size()) + " views in one step; at most " +
                  std::to_string(kMaxViews) + " per GPU");
    if (views.size() > 1 && submission_ == Submission::Graph && auto_submission_) {
      drain();  // auto means chained for batches (io/config.h); nothing queued may see the switch
      submission_ = Submission::Chained;
    }
    if (views.size() > 1 && submission_ == Submission::Graph)
      throw Error("cuda backend: backend.submission = \"graph\" replays one view per step; a batch of " +
                  std::to_string(views.size()) + " views needs chained or per_kernel");
    if (comm_->size() > 1)
      for (const BatchView& v : views)
        if (v.camera->width != views[0].camera->width || v.camera->height != views[0].camera->height)
          throw Error("cuda backend on several ranks: the views of a step must have one image size");
    Pending p{};
    for (const BatchView& v : views) {
      const DeviceImage& target = images_.at(std::size_t(v.image));
      if (target.width != v.camera->width || target.height != v.camera->height)
        throw Error("cuda backend: image " + std::to_string(v.image) + " size does not match its camera");
      p.views.push_back({*v.camera, v.image});
    }
    p.settings = s;
    p.adam_step = adam_step_ + 1;
    submit(std::move(p));
  }

  // Several ranks (a GPU communicator, dist/nccl.h): the step's gradients and loss sums are
  // all-reduced on the stream before Adam, the ADC statistics before a refine decides. Every rank
  // must issue the same collectives in the same order and finish every step it starts, so no graph
  // capture and no abandoned steps: auto modes become chained and off, explicit ones are refused.
  void set_communicator(dist::Communicator& comm) override {
    if (comm.size() > 1 && !comm.reduces_device_buffers()) return Backend::set_communicator(comm);  // refuses
    drain();
    comm_ = &comm;
    if (comm.size() == 1) return;
    if ((submission_ == Submission::Graph && !auto_submission_) || (depth_ > 1 && !auto_pipelining_))
      throw Error("cuda backend on " + std::to_string(comm.size()) + " ranks: backend.submission = \"" +
                  std::string(to_string(submission_)) + "\" and backend.pipelining = \"" +
                  (depth_ > 1 ? "depth2" : "off") + "\" cannot carry collectives; use chained and off (or auto)");
    if (submission_ == Submission::Graph) submission_ = Submission::Chained;
    depth_ = 1;
  }

  void collect_losses(std::vector<StepResult>& out, bool wait) override {
    if (wait) {
      drain();
      timer_.harvest_all();
    }
    while (!pending_.empty() && cudaEventQuery(done_events_[pending_.front().slot]) == cudaSuccess) retire_front();
    out.insert(out.end(), ready_.begin(), ready_.end());
    ready_.clear();
  }

  // One MCMC tick (cpu::mcmc_refine). Host waits: the drain, then one for the dead count, which
  // sizes the relocation and is part of the returned stats. Growth reallocates the model arrays
  // geometrically, keeping their contents; the old storage lives until that wait has passed the
  // copies out of it.
  RefineStats mcmc_refine(const McmcRefineSettings& s) override {
    drain();
    assert_idle("an MCMC refine");
    ++generation_;
    const int n = n_;
    if (n == 0) return {};
    const std::size_t target = std::max(s.target_count, std::size_t(n));
    if (target > std::size_t(std::numeric_limits<int>::max()))
      throw Error("cuda backend: MCMC target of " + std::to_string(target) + " splats exceeds the int index range");
    const int add = int(target) - n;

    const McmcSlots slots0 = slots();  // widths; pointers refreshed after growth
    std::vector<DeviceBuffer<float>> old_storage;
    if (add > 0)
      for (Groups* G : {&params_, &grads_, &m_, &v_})
        for (int g = 0; g < 5; ++g) {
          DeviceBuffer<float> old = G->g[g].grow_keep(target * std::size_t(slots0.width[g]), stream_);
          if (old.data()) old_storage.push_back(std::move(old));
        }

    const McmcScratch& scratch = mcmc_scratch_.ensure({n, std::max(n, add)});
    mcmc_find_dead(n, params_.g[3].data(), s.min_opacity, scratch, dead_host_.get(), stream_);
    syncs_.stream(stream_, "mcmc_dead_count");
    old_storage.clear();  // the copies out of it are done
    const int dead = *dead_host_.get();

    RefineStats stats;
    const McmcSlots sl = slots();
    if (dead > 0 && dead < n) {
      mcmc_relocate(sl, n, dead, s.seed, s.min_opacity, scratch, stream_);
      stats.dead = std::size_t(dead);
    }
    if (add > 0) {
      mcmc_grow(sl, n, add, s.seed, s.min_opacity, scratch, stream_);
      stats.added = std::size_t(add);
    }
    n_ = int(target);
    if (adc_stats_in_use()) reset_adc_stats();
    stats.count = target;
    return stats;
  }

  // One ADC tick (cpu::adc_refine). Host waits: the drain, one for the totals (they size the new
  // arrays and are the returned stats), and one before the old arrays are freed, since the
  // compaction reads them. The model moves out of place into fresh arrays of at least the old
  // capacity: survivors with their Adam moments, new slots with zero moments, tails zero.
  RefineStats adc_refine(const AdcRefineSettings& s) override {
    drain();
    assert_idle("an ADC refine");
    ++generation_;
    const int n = n_;
    if (n == 0) return {};
    if (n > INT_MAX / 3) throw Error("cuda backend: " + std::to_string(n) + " splats exceed the ADC scan's int range");
    if (grad2d_.size() != std::size_t(n)) reset_adc_stats();  // no statistics yet: nothing grows
    if (comm_->size() > 1) {  // every rank decides from the statistics of every rank's views
      comm_->allreduce_sum_device(grad2d_.data(), grad2d_.size(), stream_, "ADC statistics all-reduce (grad2d)");
      comm_->allreduce_sum_device(vis_count_.data(), vis_count_.size(), stream_, "ADC statistics all-reduce (count)");
    }

    const AdcScratch& scratch = adc_scratch_.ensure(n);
    adc_decide(n, params_.g[1].data(), params_.g[3].data(), grad2d_.data(), vis_count_.data(), adc::thresholds(s),
               scratch, adc_totals_host_.get(), stream_);
    syncs_.stream(stream_, "adc_totals");
    const std::int32_t* t = adc_totals_host_.get();
    const int children = t[kAdcChildren];
    const std::size_t m = std::size_t(t[kAdcKept]) + std::size_t(t[kAdcClones]) + 2 * std::size_t(children);
    if (m > std::size_t(INT_MAX)) throw Error("cuda backend: ADC would make " + std::to_string(m) + " splats");
    RefineStats r;
    r.cloned = std::size_t(t[kAdcCloned]);
    r.split = std::size_t(t[kAdcSplit]);
    r.count = m;
    r.pruned = std::size_t(n) + r.cloned + r.split - m;

    const McmcSlots src = slots();
    Groups next_params, next_m, next_v;
    McmcSlots dst = src;
    for (int g = 0; g < 5; ++g) {
      const std::size_t size = m * std::size_t(src.width[g]);
      next_params.g[g] = fresh_buffer(params_.g[g], size);
      next_m.g[g] = fresh_buffer(m_.g[g], size);
      next_v.g[g] = fresh_buffer(v_.g[g], size);
      dst.params[g] = next_params.g[g].data();
      dst.m[g] = next_m.g[g].data();
      dst.v[g] = next_v.g[g].data();
    }
    adc_compact(src, dst, n, children, s.seed, scratch, stream_);
    std::swap(params_, next_params);
    std::swap(m_, next_m);
    std::swap(v_, next_v);
    // Gradients are zero between steps; only their size changes (nothing reads them now).
    for (int g = 0; g < 5; ++g) {
      grads_.g[g].resize(m * std::size_t(src.width[g]));
      grads_.g[g].zero(stream_);
      grads_.g[g].zero_tail(stream_);
    }
    n_ = int(m);
    reset_adc_stats();
    syncs_.stream(stream_, "adc_compact");  // next_* hold the old arrays, freed on return
    return r;
  }

  void adc_reset_opacity(float max_opacity) override {
    drain();  // a step abandoned for overflow would be queued again after the reset
    cuda::adc_reset_opacity(n_, adc::logit_threshold(double(max_opacity)), params_.g[3].data(), m_.g[3].data(),
                            v_.g[3].data(), stream_);
  }

  // Test hooks (adc_stats / set_adc_stats in cuda/backend.h).
  adc::Stats stats() const {
    const_cast<CudaBackend*>(this)->drain();
    adc::Stats st;
    st.grad2d = grad2d_.download();
    st.count = vis_count_.download();
    return st;
  }
  void set_stats(const adc::Stats& st) {
    if (st.grad2d.size() != std::size_t(n_) || st.count.size() != std::size_t(n_))
      throw Error("set_adc_stats: statistics for " + std::to_string(st.count.size()) + " splats, the model has " +
                  std::to_string(n_));
    drain();
    grad2d_.upload(st.grad2d);
    vis_count_.upload(st.count);
    uploaded();
  }

  // Test hook (poison_scratch in cuda/backend.h).
  void poison() {
    drain();
    renderer_.poison_scratch();
  }

  // Test hook (model_arrays in cuda/backend.h).
  std::vector<DeviceArrayView> arrays() const {
    std::vector<DeviceArrayView> out;
    for (const Groups* G : {&params_, &grads_, &m_, &v_})
      for (const auto& b : G->g) out.push_back({b.data(), b.size(), b.capacity()});
    return out;
  }

  Image render(const Camera& cam, const RasterSettings& rs) override {
    drain();
    timer_.set_active(false);  // renders are not training steps
    renderer_.forward(params_.in(), n_, sh_coeffs(sh_degree_), cam, rs);
    timer_.set_active(true);
    Image out(cam.width, cam.height, 3);
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(out.data.data(), renderer_.pixels().image, out.data.size() * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_));
    syncs_.stream(stream_, "render_download");
    return out;
  }

  std::uint64_t peak_memory_bytes() const override { return memory_stats().peak; }

  std::vector<std::pair<std::string, double>> report() const override {
    std::vector<std::pair<std::string, double>> r;
    for (const auto& [name, count] : syncs_.counts()) r.push_back({"sync." + name, double(count)});
    r.push_back({"alloc.scratch_growths", double(renderer_.allocations())});
    if (steps_ > 0) r.push_back({"isect.mean_per_step", isect_sum_ / double(steps_)});
    // Which execution paths ran (the parity tests read these).
    r.push_back({"engine.submission_" + std::string(to_string(submission_)), 1});
    r.push_back({"engine.steps_retired", double(steps_)});
    r.push_back({"engine.max_in_flight", double(max_in_flight_)});
    r.push_back({"engine.bounded_steps", double(bounded_steps_)});
    r.push_back({"engine.isect_overflows", double(overflows_)});
    r.push_back({"engine.graph_eager_steps", double(eager_steps_)});
    r.push_back({"engine.graph_captures", double(captures_)});
    r.push_back({"engine.graph_launches", double(launches_)});
    r.push_back({"engine.deterministic_steps", double(deterministic_steps_)});
    for (const auto& [name, ms] : timer_.mean_ms()) r.push_back({"ms." + name, ms});
    return r;
  }

 private:
  struct DeviceImage {
    int width = 0, height = 0;
    DeviceBuffer<std::uint8_t> u8;
    DeviceBuffer<float> f32;
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

  void submit(Pending p) {
    make_room();
    int unfinished = 1;
    for (const Pending& q : pending_) unfinished += cudaEventQuery(done_events_[q.slot]) == cudaErrorNotReady;
    max_in_flight_ = std::max(max_in_flight_, unfinished);
    p.slot = next_slot_;
    next_slot_ = (next_slot_ + 1) % kSlots;
    adam_step_ = p.adam_step;
    if (submission_ == Submission::Graph)
      run_graph(p);
    else
      run_step(p, false);
    Slot* slot = ring_.get() + p.slot;
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(slot->sums, view_sums_.data(), p.views.size() * sizeof slot->sums[0],
                                     cudaMemcpyDeviceToHost, stream_));
    if (bounded())
      SPLAT_CUDA_CHECK(cudaMemcpyAsync(slot->status, renderer_.status(), sizeof slot->status, cudaMemcpyDeviceToHost,
                                       stream_));
    SPLAT_CUDA_CHECK(cudaEventRecord(done_events_[p.slot], stream_));
    pending_.push_back(std::move(p));
  }

  // Before a step is queued: a free ring entry, and with bounded sizing at most depth - 1 steps
  // still running (off: none; depth2: one). Exact sizing waits inside the step instead.
  void make_room() {
    auto unfinished = [&] {
      int k = 0;
      for (const Pending& q : pending_) k += cudaEventQuery(done_events_[q.slot]) == cudaErrorNotReady;
      return k;
    };
    while (!pending_.empty() && (int(pending_.size()) == kSlots || (bounded() && unfinished() >= depth_))) {
      syncs_.event(done_events_[pending_.front().slot], bounded() ? "step_done" : "loss_ring_full");
      retire_front();
    }
  }

  // The oldest queued step, whose event has passed: its loss joins ready_, or, if it was
  // abandoned for an intersection overflow, it and every step after it are queued again.
  void retire_front() {
    const Pending& p = pending_.front();
    const Slot& slot = ring_.get()[p.slot];
    if (bounded() && slot.status[1]) return recover();
    const double lambda = p.settings.ssim_lambda, views = double(p.views.size());
    StepResult r;  // the mean over the step's views
    if (comm_->size() > 1) {  // slot 0 holds the sums over all ranks' views, all of one size
      const double elements = double(p.views[0].cam.width) * p.views[0].cam.height * 3 * p.settings.batch_size;
      r.l1 = double(slot.sums[0][0]) / elements;
      r.ssim = double(slot.sums[0][1]) / elements;
      r.loss = (1.0 - lambda) * r.l1 + lambda * (1.0 - r.ssim);
    }
    for (std::size_t k = 0; comm_->size() == 1 && k < p.views.size(); ++k) {
      const double elements = double(p.views[k].cam.width) * p.views[k].cam.height * 3;
      const double l1 = double(slot.sums[k][0]) / elements, ssim = double(slot.sums[k][1]) / elements;
      r.l1 += l1 / views;
      r.ssim += ssim / views;
      r.loss += ((1.0 - lambda) * l1 + lambda * (1.0 - ssim)) / views;
    }
    ready_.push_back(r);
    isect_sum_ += bounded() ? double(slot.status[0]) : double(p.isect_count);
    ++steps_;
    pending_.pop_front();
  }

  // The front step overflowed its intersection buffers. The flag stays raised, so every step
  // queued after it skipped its update too: wait for them, make room for the largest count any
  // of them needed (they all counted), lower the flag and queue them all again, in order.
  void recover() {
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

  // The work of one step on stream_. from_device: the camera, Adam and noise scalars come from
  // scalars_ and the target from staged_ (graph mode, eager or captured; one view).
  void run_step(Pending& p, bool from_device) {
    const StepSettings& s = p.settings;
    const Sizing sizing = bounded() ? Sizing::Bounded : Sizing::Exact;
    const int* abort = sizing == Sizing::Bounded ? renderer_.abort_flag() : nullptr;
    bounded_steps_ += sizing == Sizing::Bounded;
    p.isect_count = 0;
    for (std::size_t k = 0; k < p.views.size(); ++k) view_pass(p.views[k], k, s, sizing, from_device, p.isect_count);
    deterministic_steps_ += deterministic_;

    if (comm_->size() > 1) {  // every rank's views: gradient sums, and loss sums in view 0's slot
      for (auto& g : grads_.g) comm_->allreduce_sum_device(g.data(), g.size(), stream_, "gradient all-reduce");
      for (std::size_t k = 1; k < p.views.size(); ++k) add_in_place(view_sums_.data(), view_sums_.data() + 2 * k, 2, stream_);
      comm_->allreduce_sum_device(view_sums_.data(), 2, stream_, "loss all-reduce");
    }
    // The gradients hold the sum over the batch's views (of every rank's, once a communicator has
    // all-reduced them): Adam takes their mean; the regularizers are added batch_size times.
    const float batch = float(s.batch_size);
    if (s.opacity_reg > 0 || s.scale_reg > 0) {  // MCMC's L1 terms, part of the loss Adam sees
      timer_.begin("regularize", stream_);
      mcmc_regularizer_grads(n_, params_.g[3].data(), params_.g[1].data(), batch * s.opacity_reg,
                             batch * s.scale_reg, grads_.g[3].data(), grads_.g[1].data(), stream_);
      timer_.end(stream_);
    }

    timer_.begin("adam", stream_);
    const std::array<AdamGroup, 5> groups = adam_groups(s);
    adam_step(groups.data(), 5, p.adam_step, stream_, 1.0f / batch, from_device ? &scalars_.data()->adam : nullptr,
              abort);
    timer_.end(stream_);

    if (s.noise_scale > 0) {  // MCMC exploration noise on the updated parameters
      timer_.begin("noise", stream_);
      mcmc_inject_noise(n_, params_.g[1].data(), params_.g[2].data(), params_.g[3].data(),
                        {float(s.noise_scale), s.noise_seed}, params_.g[0].data(), stream_,
                        from_device ? &scalars_.data()->noise : nullptr, abort);
      timer_.end(stream_);
    }
    timer_.end_step();
  }

  // One view of a step: forward, loss (its sums to view_sums_[k]), backward into the step's
  // gradients, ADC statistics.
  void view_pass(const ViewRef& view, std::size_t k, const StepSettings& s, Sizing sizing, bool from_device,
                 int& isect_count) {
    const Camera& cam = view.cam;
    const DeviceImage& target = from_device ? staged_ : images_[std::size_t(view.image)];
    renderer_.forward(params_.in(), n_, sh_coeffs(sh_degree_), cam, s.raster, sizing,
                      from_device ? &scalars_.data()->cam : nullptr);
    if (sizing == Sizing::Exact) isect_count += renderer_.intersections();
    const int* abort = sizing == Sizing::Bounded ? renderer_.abort_flag() : nullptr;

    PerPixel& px = renderer_.pixels();
    const LossParams lp{cam.width, cam.height, float(s.ssim_lambda)};
    timer_.begin("loss", stream_);
    if (target.u8.size())
      photometric_loss_u8(lp, px.image, target.u8.data(), px.v_image, px.sums, px.loss_scratch, stream_);
    else
      photometric_loss(lp, px.image, target.f32.data(), px.v_image, px.sums, px.loss_scratch, stream_);
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(view_sums_.data() + 2 * k, px.sums, 2 * sizeof(float), cudaMemcpyDeviceToDevice,
                                     stream_));
    timer_.end(stream_);

    if (k == 0) {
      renderer_.backward(params_.in(), px.v_image, nullptr, grads_.out(), deterministic_);
    } else {  // project_bwd overwrites its output: this view's gradients go aside, then are added
      for (int g = 0; g < 5; ++g) view_grads_.g[g].resize(grads_.g[g].size());
      renderer_.backward(params_.in(), px.v_image, nullptr, view_grads_.out(), deterministic_);
      timer_.begin("batch_accumulate", stream_);
      for (int g = 0; g < 5; ++g) add_in_place(grads_.g[g].data(), view_grads_.g[g].data(), grads_.g[g].size(), stream_);
      timer_.end(stream_);
    }

    if (s.accumulate_grad2d && n_ > 0) {  // ADC statistics from this view's screen-space gradients
      if (grad2d_.size() != std::size_t(n_)) reset_adc_stats();  // first use since the count changed
      timer_.begin("adc_stats", stream_);
      const PerSplat& sp = renderer_.splats();
      adc_accumulate(n_, sp.proj.radii, sp.v.means2d, 0.5f * float(cam.width), 0.5f * float(cam.height),
                     grad2d_.data(), vis_count_.data(), stream_, abort);
      timer_.end(stream_);
    }
  }

  std::array<AdamGroup, 5> adam_groups(const StepSettings& s) {
    const int K = sh_coeffs(sh_degree_);
    std::array<AdamGroup, 5> groups;
    const float lrs[5] = {float(s.lr.means), float(s.lr.log_scales), float(s.lr.quats), float(s.lr.opacity),
                          float(s.lr.sh0)};
    for (int i = 0; i < 5; ++i)
      groups[i] = {params_.g[i].data(), grads_.g[i].data(), m_.g[i].data(), v_.g[i].data(),
                   params_.g[i].size(), lrs[i], i == 4 ? K : 0, float(s.lr.shN)};
    return groups;
  }

  // Graph mode: this step's scalars and target go to fixed device memory, then the captured
  // graph of its shape replays; a shape seen for the first time runs eagerly, and is captured
  // at its second step (by then every buffer has its size, so nothing allocates in a capture).
  void run_graph(Pending& p) {
    const StepSettings& s = p.settings;
    const ViewRef& view = p.views.at(0);  // step() lets only one view through in graph mode
    const DeviceImage& target = images_[std::size_t(view.image)];
    Slot& slot = ring_.get()[p.slot];
    const std::array<AdamGroup, 5> groups = adam_groups(s);
    slot.scalars = {CameraParams::from(view.cam), adam_scalars(groups.data(), 5, p.adam_step),
                    {float(s.noise_scale), s.noise_seed}};
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(scalars_.data(), &slot.scalars, sizeof(StepScalars), cudaMemcpyHostToDevice,
                                     stream_));
    stage_target(target);

    GraphKey key;
    key.generation = generation_;
    key.n = n_;
    key.capacity = renderer_.capacity();
    key.width = view.cam.width;
    key.height = view.cam.height;
    key.sh_degree = s.raster.sh_degree;
    key.antialiased = s.raster.antialiased;
    key.accumulate_grad2d = s.accumulate_grad2d;
    key.noise = s.noise_scale > 0;
    key.u8 = target.u8.size() > 0;
    for (int c = 0; c < 3; ++c) key.background[c] = s.raster.background[c];
    key.ssim_lambda = float(s.ssim_lambda);
    key.opacity_reg = s.opacity_reg;
    key.scale_reg = s.scale_reg;
    if (key.accumulate_grad2d && grad2d_.size() != std::size_t(n_)) key.generation = -2;  // stats not sized yet

    if (graph_ && key == graph_key_) {
      SPLAT_CUDA_CHECK(cudaGraphLaunch(graph_, stream_));
      ++launches_;
      bounded_steps_ += 1;
      deterministic_steps_ += deterministic_;
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

  // The graph reads the target from one place: the step's image is copied there first.
  void stage_target(const DeviceImage& target) {
    staged_.width = target.width;
    staged_.height = target.height;
    staged_.u8.resize(target.u8.size());
    if (target.u8.size())
      SPLAT_CUDA_CHECK(cudaMemcpyAsync(staged_.u8.data(), target.u8.data(), target.u8.bytes(),
                                       cudaMemcpyDeviceToDevice, stream_));
    staged_.f32.resize(target.f32.size());
    if (target.f32.size())
      SPLAT_CUDA_CHECK(cudaMemcpyAsync(staged_.f32.data(), target.f32.data(), target.f32.bytes(),
                                       cudaMemcpyDeviceToDevice, stream_));
  }

  // Nothing in flight afterwards, every queued step retired (those abandoned for an overflow
  // queued again and finished).
  void drain() {
    do {
      syncs_.stream(stream_, "drain");
      while (!pending_.empty() && cudaEventQuery(done_events_[pending_.front().slot]) == cudaSuccess) retire_front();
    } while (!pending_.empty());
  }

  // The proof a refine tick may change buffers: the stream is idle and no step is queued.
  void assert_idle(const char* before) {
    if (cudaStreamQuery(stream_) != cudaSuccess || !pending_.empty())
      throw Error(std::string("cuda backend: work still in flight after the drain before ") + before);
  }

  // ADC statistics: one zeroed entry per live splat. Allocated by the first step that accumulates
  // and kept sized to the count from then on; called only with nothing in flight that reads them.
  bool adc_stats_in_use() const { return grad2d_.capacity() > 0; }
  void reset_adc_stats() {
    grad2d_.resize(std::size_t(n_));
    vis_count_.resize(std::size_t(n_));
    grad2d_.zero(stream_);
    vis_count_.zero(stream_);
  }

  // `size` floats with at least `like`'s capacity (geometric growth past it) and a zero tail;
  // [0, size) is for the caller to write.
  DeviceBuffer<float> fresh_buffer(const DeviceBuffer<float>& like, std::size_t size) {
    std::size_t cap = like.capacity();
    if (size > cap) cap = std::max(size, cap + cap / 2);
    DeviceBuffer<float> b(cap);
    b.resize(size);
    b.zero_tail(stream_);
    return b;
  }

  McmcSlots slots() {
    McmcSlots sl{};
    const int widths[5] = {3, 3, 4, 1, 3 * sh_coeffs(sh_degree_)};
    for (int g = 0; g < 5; ++g) {
      sl.params[g] = params_.g[g].data();
      sl.m[g] = m_.g[g].data();
      sl.v[g] = v_.g[g].data();
      sl.width[g] = widths[g];
    }
    return sl;
  }

  const bool auto_submission_, auto_pipelining_;
  Submission submission_;
  int depth_;
  dist::Communicator* comm_ = &dist::single_process();  // steps that may run at once: 1, or 2 with depth2 pipelining
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
  long steps_ = 0, bounded_steps_ = 0, overflows_ = 0, eager_steps_ = 0, captures_ = 0, launches_ = 0,
       deterministic_steps_ = 0;
  int max_in_flight_ = 0;
};

}  // namespace

std::vector<DeviceArrayView> model_arrays(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (!cuda) throw Error("model_arrays: the backend is " + backend.name() + ", not cuda");
  return cuda->arrays();
}

adc::Stats adc_stats(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (!cuda) throw Error("adc_stats: the backend is " + backend.name() + ", not cuda");
  return cuda->stats();
}

void set_adc_stats(Backend& backend, const adc::Stats& stats) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda) throw Error("set_adc_stats: the backend is " + backend.name() + ", not cuda");
  cuda->set_stats(stats);
}

void poison_scratch(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda) throw Error("poison_scratch: the backend is " + backend.name() + ", not cuda");
  cuda->poison();
}

std::unique_ptr<Backend> make_backend(const BackendConfig& cfg) {
  if (!device_available()) throw Error("backend.type = \"cuda\": no CUDA device is available");
  return std::make_unique<CudaBackend>(cfg);
}

}  // namespace splat::cuda
