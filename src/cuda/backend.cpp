// The CUDA backend: every stage of a training step on one stream. The one host wait inside a
// step reads the intersection count (buffers are sized from it); the loss comes back
// asynchronously through pinned memory and is collected later.
#include "cuda/backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <deque>
#include <limits>

#include "cuda/accumulate.h"
#include "cuda/adam.h"
#include "cuda/adc.h"
#include "cuda/loss.h"
#include "cuda/mcmc.h"
#include "cuda/renderer.h"

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

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(bool timing)
      : stream_(new_stream()), timer_(timing), renderer_(stream_, syncs_, timer_), loss_host_(kLossSlots * 2) {
    for (auto& e : loss_events_) SPLAT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    for (auto& e : loss_events_) cudaEventDestroy(e);
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
    grads_.upload(s.adam_m);  // zero-valued shapes; Adam clears them after every use
    for (auto& g : grads_.g) g.zero(stream_);
    for (Groups* G : {&params_, &grads_, &m_, &v_}) G->zero_tails(stream_);
    adam_step_ = s.adam_step;
    if (adc_stats_in_use()) reset_adc_stats();
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

  // One view of a step: forward, loss, backward, ADC statistics. The first view's gradients land
  // in grads_; project_bwd overwrites its output, so later views' go to view_grads_ and are added.
  void view_pass(const Camera& cam, int image, const StepSettings& s, bool first, int step_views) {
    const DeviceImage& target = images_.at(image);
    if (target.width != cam.width || target.height != cam.height)
      throw Error("cuda backend: image " + std::to_string(image) + " size does not match its camera");
    renderer_.forward(params_.in(), n_, sh_coeffs(sh_degree_), cam, s.raster);

    // Loss and its gradient, then the sums go home asynchronously.
    PerPixel& px = renderer_.pixels();
    const LossParams lp{cam.width, cam.height, float(s.ssim_lambda)};
    timer_.begin("loss", stream_);
    if (target.u8.size())
      photometric_loss_u8(lp, px.image, target.u8.data(), px.v_image, px.sums, px.loss_scratch, stream_);
    else
      photometric_loss(lp, px.image, target.f32.data(), px.v_image, px.sums, px.loss_scratch, stream_);
    timer_.end(stream_);
    queue_loss_readback(double(cam.width) * cam.height * 3, s.ssim_lambda, step_views);

    if (first) {
      renderer_.backward(params_.in(), px.v_image, nullptr, grads_.out());
    } else {
      for (int g = 0; g < 5; ++g) view_grads_.g[g].resize(grads_.g[g].size());
      renderer_.backward(params_.in(), px.v_image, nullptr, view_grads_.out());
      timer_.begin("batch_accumulate", stream_);
      for (int g = 0; g < 5; ++g)
        add_in_place(grads_.g[g].data(), view_grads_.g[g].data(), grads_.g[g].size(), stream_);
      timer_.end(stream_);
    }

    if (s.accumulate_grad2d && n_ > 0) {  // ADC statistics from this view's screen-space gradients
      if (grad2d_.size() != std::size_t(n_)) reset_adc_stats();  // first use since the count changed
      timer_.begin("adc_stats", stream_);
      const PerSplat& sp = renderer_.splats();
      adc_accumulate(n_, sp.proj.radii, sp.v.means2d, 0.5f * float(cam.width), 0.5f * float(cam.height),
                     grad2d_.data(), vis_count_.data(), stream_);
      timer_.end(stream_);
    }
  }

  void step(std::span<const BatchView> views, const StepSettings& s) override {
    if (views.empty()) throw Error("cuda backend: a step needs at least one view");
    for (std::size_t k = 0; k < views.size(); ++k)
      view_pass(*views[k].camera, views[k].image, s, k == 0, k + 1 == views.size() ? int(views.size()) : 0);

    // Adam scales the summed gradients by 1 / B; the regularizers, once per step, are added B times
    // as large so that they survive that scaling unchanged.
    const double batch = double(s.batch_size);
    if (s.opacity_reg > 0 || s.scale_reg > 0) {  // MCMC's L1 terms, part of the loss Adam sees
      timer_.begin("regularize", stream_);
      mcmc_regularizer_grads(n_, params_.g[3].data(), params_.g[1].data(), batch * s.opacity_reg,
                             batch * s.scale_reg, grads_.g[3].data(), grads_.g[1].data(), stream_);
      timer_.end(stream_);
    }

    timer_.begin("adam", stream_);
    const int K = sh_coeffs(sh_degree_);
    std::array<AdamGroup, 5> groups;
    const float lrs[5] = {float(s.lr.means), float(s.lr.log_scales), float(s.lr.quats), float(s.lr.opacity),
                          float(s.lr.sh0)};
    for (int i = 0; i < 5; ++i)
      groups[i] = {params_.g[i].data(), grads_.g[i].data(), m_.g[i].data(), v_.g[i].data(),
                   params_.g[i].size(), lrs[i], i == 4 ? K : 0, float(s.lr.shN)};
    adam_step(groups.data(), 5, ++adam_step_, stream_, 1.0f / float(s.batch_size));
    timer_.end(stream_);

    if (s.noise_scale > 0) {  // MCMC exploration noise on the updated parameters
      timer_.begin("noise", stream_);
      mcmc_inject_noise(n_, params_.g[1].data(), params_.g[2].data(), params_.g[3].data(), float(s.noise_scale),
                        s.noise_seed, params_.g[0].data(), stream_);
      timer_.end(stream_);
    }
    timer_.end_step();
  }

  void collect_losses(std::vector<StepResult>& out, bool wait) override {
    if (wait) {
      drain();
      timer_.harvest_all();
    }
    while (!pending_.empty() && cudaEventQuery(loss_events_[pending_.front().slot]) == cudaSuccess)
      retire_oldest_loss();
    out.insert(out.end(), ready_.begin(), ready_.end());
    ready_.clear();
  }

  // One MCMC tick (cpu::mcmc_refine). Host waits: the drain, then one for the dead count, which
  // sizes the relocation and is part of the returned stats. Growth reallocates the model arrays
  // geometrically, keeping their contents; the old storage lives until that wait has passed the
  // copies out of it.
  RefineStats mcmc_refine(const McmcRefineSettings& s) override {
    drain();
    if (cudaStreamQuery(stream_) != cudaSuccess)
      throw Error("cuda backend: work still in flight after the drain before an MCMC refine");
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
    if (cudaStreamQuery(stream_) != cudaSuccess)
      throw Error("cuda backend: work still in flight after the drain before an ADC refine");
    const int n = n_;
    if (n == 0) return {};
    if (n > INT_MAX / 3) throw Error("cuda backend: " + std::to_string(n) + " splats exceed the ADC scan's int range");
    if (grad2d_.size() != std::size_t(n)) reset_adc_stats();  // no statistics yet: nothing grows

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
    for (const auto& [name, ms] : timer_.mean_ms()) r.push_back({"ms." + name, ms});
    return r;
  }

 private:
  struct DeviceImage {
    int width = 0, height = 0;
    DeviceBuffer<std::uint8_t> u8;
    DeviceBuffer<float> f32;
  };
  struct PendingLoss {
    int slot;
    double elements, lambda;
    int step_views;  // the last view of its step: the step's view count; other views: 0
  };
  static constexpr int kLossSlots = 4;

  void queue_loss_readback(double elements, double lambda, int step_views) {
    if (int(pending_.size()) == kLossSlots) {  // ring full (not with one wait per step): make room
      syncs_.event(loss_events_[pending_.front().slot], "loss_ring_full");
      retire_oldest_loss();
    }
    const int slot = next_slot_;
    next_slot_ = (next_slot_ + 1) % kLossSlots;
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(loss_host_.get() + slot * 2, renderer_.pixels().sums, 2 * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_));
    SPLAT_CUDA_CHECK(cudaEventRecord(loss_events_[slot], stream_));
    pending_.push_back({slot, elements, lambda, step_views});
  }

  // The oldest pending loss, whose readback has completed, joins its step's; the step's mean over
  // its views is ready after its last view.
  void retire_oldest_loss() {
    const PendingLoss p = pending_.front();
    pending_.pop_front();
    const float* sums = loss_host_.get() + p.slot * 2;
    const double l1 = double(sums[0]) / p.elements, ssim = double(sums[1]) / p.elements;
    step_loss_.l1 += l1;
    step_loss_.ssim += ssim;
    step_loss_.loss += (1.0 - p.lambda) * l1 + p.lambda * (1.0 - ssim);
    if (p.step_views == 0) return;
    const double n = double(p.step_views);
    ready_.push_back({step_loss_.loss / n, step_loss_.l1 / n, step_loss_.ssim / n});
    step_loss_ = {};
  }

  // Nothing in flight afterwards.
  void drain() { syncs_.stream(stream_, "drain"); }

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

  cudaStream_t stream_ = nullptr;
  SyncLog syncs_;
  StageTimer timer_;
  Renderer renderer_;
  int n_ = 0, sh_degree_ = 0;
  std::int64_t adam_step_ = 0;
  Groups params_, grads_, m_, v_;
  Groups view_grads_;  // batches: the gradients of a view after the first, added into grads_
  ScratchGroup<McmcScratch, McmcSize> mcmc_scratch_;
  Pinned<std::int32_t> dead_host_{1};
  DeviceBuffer<float> grad2d_;            // [N] ADC: gradient-norm sums since the last tick
  DeviceBuffer<std::int32_t> vis_count_;  // [N] ADC: visible steps since the last tick
  ScratchGroup<AdcScratch, int> adc_scratch_;
  Pinned<std::int32_t> adc_totals_host_{kAdcTotals};
  std::vector<DeviceImage> images_;
  Pinned<float> loss_host_;
  std::array<cudaEvent_t, kLossSlots> loss_events_{};
  std::deque<PendingLoss> pending_;
  std::vector<StepResult> ready_;
  StepResult step_loss_;  // sums over the retired views of the step in progress
  int next_slot_ = 0;
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

std::unique_ptr<Backend> make_backend(bool timing) {
  if (!device_available()) throw Error("backend.type = \"cuda\": no CUDA device is available");
  return std::make_unique<CudaBackend>(timing);
}

}  // namespace splat::cuda
