// The CUDA backend's host boundary: training images, the model and Adam state in and out, and
// the test hooks of cuda/backend.h.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda/backend_impl.h"
#include "cuda/digest.h"
#include "cuda/filter3d.h"
#include "render/state_digest.h"
#include "render/target.h"

namespace splat::cuda {

// Training images stay on the device as they are on the host: 8-bit, 3 or 4 channels.
void CudaBackend::set_images(const std::vector<const Image8*>& images) {
  drain();
  images_.clear();
  for (const Image8* img : images) {
    if (img->channels != 3 && img->channels != 4)
      throw Error("cuda backend: training images must be RGB or RGBA");
    const std::size_t counted = img->counted_pixels();
    if (counted == 0) throw Error("cuda backend: a training image's mask leaves no pixel");
    DeviceImage d;
    d.width = img->width;
    d.height = img->height;
    d.format = target_format(*img);
    d.pixels.upload(img->data);
    d.norm.upload(std::vector<float>{float(double(img->pixels()) / double(counted))});
    images_.push_back(std::move(d));
  }
  uploaded();
}

void CudaBackend::set_state(const TrainState& s) {
  drain();
  n_ = int(s.params.size());
  sh_degree_ = s.params.sh_degree;
  params_.upload(s.params);
  m_.upload(s.adam_m);
  v_.upload(s.adam_v);
  // Gradients start at zero (every step's backward overwrites them before Adam reads them). Not an
  // upload of anything: a pageable cudaMemcpy can land after a zeroing queued on stream_ behind it.
  for (int g = 0; g < 5; ++g) {
    grads_.g[g].resize(params_.g[g].size());
    grads_.g[g].zero(stream_);
  }
  for (Groups* G : {&params_, &grads_, &m_, &v_}) G->zero_tails(stream_);
  adam_step_ = s.adam_step;
  if (s.adc.size() == std::size_t(n_)) {
    grad2d_.upload(s.adc.grad2d);
    vis_count_.upload(s.adc.count);
  } else if (adc_stats_in_use()) {
    reset_adc_stats();
  }
  if (!s.filter3d.empty() && s.filter3d.size() != s.params.size())
    throw Error("cuda backend: " + std::to_string(s.filter3d.size()) + " 3D filter variances for " +
                std::to_string(s.params.size()) + " splats");
  filter_on_ = !s.filter3d.empty();
  if (filter_on_) filter3d_.upload(s.filter3d);
  ++generation_;
  uploaded();
}

void CudaBackend::update_filter3d(std::span<const Camera> cameras) {
  std::vector<CameraParams> cams;
  for (const Camera& c : cameras) cams.push_back(CameraParams::from(c));
  const bool same_cams =
      cams.size() == filter_cams_host_.size() &&
      std::memcmp(cams.data(), filter_cams_host_.data(), cams.size() * sizeof(CameraParams)) == 0;
  // Nothing in flight: a queued step that overflowed its intersection buffers would run again
  // after this update and see variances from the means before it (recover() queues steps, not
  // this), where the CPU reference computes them after it. One wait every 100 steps.
  drain();
  if (!same_cams || filter3d_.size() != std::size_t(n_)) {
    if (!same_cams) {
      filter_cams_.upload(cams);
      filter_cams_host_ = std::move(cams);
      uploaded();
    }
    filter3d_.resize(std::size_t(n_));
    ++generation_;
  }
  filter_on_ = true;
  filter3d_variances(n_, params_.g[0].data(), filter_cams_.data(), int(filter_cams_host_.size()),
                     filter3d_.data(), filter_fallback_.data(), stream_);
}

const float* CudaBackend::filter3d() const {
  if (!filter_on_) return nullptr;
  if (filter3d_.size() != std::size_t(n_))
    throw Error("cuda backend: the 3D filter has " + std::to_string(filter3d_.size()) +
                " entries for " + std::to_string(n_) +
                " splats (update_filter3d after every refine tick)");
  return filter3d_.data();
}

TrainState CudaBackend::state() const {
  const_cast<CudaBackend*>(this)->drain();
  TrainState s;
  for (Gaussians* g : {&s.params, &s.adam_m, &s.adam_v}) g->sh_degree = sh_degree_;
  params_.download(s.params);
  m_.download(s.adam_m);
  v_.download(s.adam_v);
  s.adam_step = adam_step_;
  if (adc_stats_in_use() && grad2d_.size() == std::size_t(n_)) {
    s.adc.grad2d = grad2d_.download();
    s.adc.count = vis_count_.download();
  }
  if (filter_on_) s.filter3d = filter3d_.download();
  return s;
}

Gaussians CudaBackend::params() const {
  const_cast<CudaBackend*>(this)->drain();
  Gaussians g;
  g.sh_degree = sh_degree_;
  params_.download(g);
  return g;
}

// Where the state is: the ranks compare digests every train.digest_every steps, and hashing a
// download of a 400k-splat state (3 x 94 MB) on the host left two GPUs no faster than one on Lego
// (docs/perf-log.md, "Several GPUs").
std::uint64_t CudaBackend::state_digest() const {
  auto* self = const_cast<CudaBackend*>(this);
  self->drain();
  DeviceBuffer<unsigned long long> sum(1);
  sum.zero(stream_);
  std::uint64_t words = 0;
  for (const Groups* G : {&params_, &m_, &v_})
    for (const DeviceBuffer<float>& b : G->g) {
      add_digest_terms(b.data(), b.size(), words, sum.data(), stream_);
      words += (b.size() + 1) / 2;
    }
  self->syncs_.stream(stream_, "digest");
  return digest_finish(sum.download()[0], words, sh_degree_, adam_step_);
}

// One pass over the parameters on the device and one 40-byte download, every check period.
std::string CudaBackend::non_finite_group() const {
  auto* self = const_cast<CudaBackend*>(this);
  self->drain();
  DeviceBuffer<unsigned long long> counts(params_.g.size());
  counts.zero(stream_);
  for (std::size_t i = 0; i < params_.g.size(); ++i)
    count_non_finite(params_.g[i].data(), params_.g[i].size(), counts.data() + i, stream_);
  self->syncs_.stream(stream_, "finite check");
  const std::vector<unsigned long long> found = counts.download();
  std::vector<std::string> names;
  Gaussians{}.for_each_group(
      [&](const char* name, const std::vector<float>&) { names.push_back(name); });
  for (std::size_t i = 0; i < found.size(); ++i)
    if (found[i] != 0) return names[i];
  return "";
}

// Test hooks (adc_stats / set_adc_stats in cuda/backend.h).
adc::Stats CudaBackend::stats() const {
  const_cast<CudaBackend*>(this)->drain();
  adc::Stats st;
  st.grad2d = grad2d_.download();
  st.count = vis_count_.download();
  return st;
}

void CudaBackend::set_stats(const adc::Stats& st) {
  if (st.grad2d.size() != std::size_t(n_) || st.count.size() != std::size_t(n_))
    throw Error("set_adc_stats: statistics for " + std::to_string(st.count.size()) +
                " splats, the model has " + std::to_string(n_));
  drain();
  grad2d_.upload(st.grad2d);
  vis_count_.upload(st.count);
  uploaded();
}

// Test hook (poison_scratch in cuda/backend.h).
void CudaBackend::poison() {
  drain();
  renderer_.poison_scratch();
}

// Test hook (model_arrays in cuda/backend.h).
std::vector<DeviceArrayView> CudaBackend::arrays() const {
  std::vector<DeviceArrayView> out;
  for (const Groups* G : {&params_, &grads_, &m_, &v_})
    for (const auto& b : G->g) out.push_back({b.data(), b.size(), b.capacity()});
  return out;
}

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

}  // namespace splat::cuda
