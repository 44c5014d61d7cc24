#include "cuda/device_model.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "cuda/digest.h"
#include "cuda/filter3d_cuda.h"
#include "engine/state_digest.h"

namespace splat::cuda {

void DeviceModel::upload(const TrainState& s) {
  check_adc_stats(s.adc, "cuda");
  n = int(s.params.size());
  sh_degree = s.params.sh_degree;
  params.upload(s.params);
  m.upload(s.adam_m);
  v.upload(s.adam_v);
  // Gradients start at zero (every step's backward overwrites them before Adam reads them). Not an
  // upload of anything: a pageable cudaMemcpy can land after a zeroing queued on the stream behind
  // it.
  for (int g = 0; g < 5; ++g) {
    grads.g[g].resize(holds(grads, g) ? params.g[g].size() : 0);
    grads.g[g].zero(stream_);
  }
  for (Groups* G : {&params, &grads, &m, &v}) G->zero_tails(stream_);
  adam_step = s.adam_step;
  if (s.adc.size() == std::size_t(n)) {
    grad2d.upload(s.adc.grad2d);
    vis_count.upload(s.adc.count);
    if (!s.adc.grad2d_abs.empty())
      grad2d_abs.upload(s.adc.grad2d_abs);
    else if (grad2d_abs_in_use())
      reset_grad2d_abs();
  } else if (adc_stats_in_use()) {
    reset_adc_stats();
  }
  if (!s.filter3d.empty() && s.filter3d.size() != s.params.size())
    throw Error("cuda backend: " + std::to_string(s.filter3d.size()) + " 3D filter variances for " +
                std::to_string(s.params.size()) + " splats");
  filter_on_ = !s.filter3d.empty();
  if (filter_on_) filter3d_.upload(s.filter3d);
  appearance.params.upload(s.appearance.params);
  appearance.m.upload(s.appearance.m);
  appearance.v.upload(s.appearance.v);
  appearance.grads.resize(s.appearance.params.size());
  pose.params.upload(s.pose.params);
  pose.m.upload(s.pose.m);
  pose.v.upload(s.pose.v);
  pose.steps.upload(s.pose.steps);
  ++generation;
  uploaded();
}

void DeviceModel::use_sh_grads() {
  if (sh_grads_) return;
  sh_grads_ = true;
  // Never allocated before, so there is nothing to copy or keep: zero throughout, with the
  // parameters' room so that growth to the cap does not move it.
  (void)grads.g[4].grow_keep(params.g[4].size(), stream_, params.g[4].capacity());
  ++generation;  // a new pointer for captured step graphs
}

TrainState DeviceModel::download() const {
  TrainState s;
  for (Gaussians* g : {&s.params, &s.adam_m, &s.adam_v}) g->sh_degree = sh_degree;
  params.download(s.params);
  m.download(s.adam_m);
  v.download(s.adam_v);
  s.adam_step = adam_step;
  if (adc_stats_in_use() && grad2d.size() == std::size_t(n)) {
    s.adc.grad2d = grad2d.download();
    s.adc.count = vis_count.download();
    if (grad2d_abs.size() == std::size_t(n)) s.adc.grad2d_abs = grad2d_abs.download();
  }
  if (filter_on_) s.filter3d = filter3d_.download();
  s.appearance = {appearance.params.download(), appearance.m.download(), appearance.v.download()};
  s.pose = {pose.params.download(), pose.m.download(), pose.v.download(), pose.steps.download()};
  return s;
}

Gaussians DeviceModel::download_params() const {
  Gaussians g;
  g.sh_degree = sh_degree;
  params.download(g);
  return g;
}

// The ranks compare digests every train.digest_every steps, and hashing a download of a
// 400k-splat state (3 x 94 MB) on the host left two GPUs no faster than one on Lego
// (tools/gpu-machine/perf-log.md, "Several GPUs").
std::uint64_t DeviceModel::digest() const {
  DeviceBuffer<unsigned long long> sum(1);
  sum.zero(stream_);
  std::uint64_t words = 0;
  const auto add = [&](const DeviceBuffer<float>& b) {
    add_digest_terms(b.data(), b.size(), words, sum.data(), stream_);
    words += (b.size() + 1) / 2;
  };
  for (const Groups* G : {&params, &m, &v})
    for (const DeviceBuffer<float>& b : G->g) add(b);
  for (const DeviceBuffer<float>* b : {&appearance.params, &appearance.m, &appearance.v}) add(*b);
  for (const DeviceBuffer<float>* b : {&pose.params, &pose.m, &pose.v}) add(*b);
  // The step counts as floats' bits, as engine/backend.cpp's state_digest adds them.
  add_digest_terms(reinterpret_cast<const float*>(pose.steps.data()), pose.steps.size(), words,
                   sum.data(), stream_);
  words += (pose.steps.size() + 1) / 2;
  syncs_.stream(stream_, "digest");
  return digest_finish(sum.download()[0], words, sh_degree, adam_step);
}

// Two passes over the parameters on the device and one 112-byte download, every check period.
std::vector<std::string> DeviceModel::diverged_groups(const DivergenceLimits& limits) const {
  std::vector<std::string> names;
  Gaussians{}.for_each_group(
      [&](const char* name, const std::vector<float>&) { names.push_back(name); });
  names.push_back("appearance");
  names.push_back("pose");
  // Per group: the values outside DivergenceLimits::hard, then those outside its range.
  DeviceBuffer<unsigned long long> counts(2 * names.size());
  std::vector<std::size_t> sizes;
  counts.zero(stream_);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const DeviceBuffer<float>& b = i < params.g.size()        ? params.g[i]
                                   : names[i] == "appearance" ? appearance.params
                                                              : pose.params;
    sizes.push_back(b.size());
    for (const auto [k, range] :
         {std::pair{0, DivergenceLimits::hard}, std::pair{1, limits.range(names[i])}})
      count_outside(b.data(), b.size(), range.first, range.second, counts.data() + 2 * i + k,
                    stream_);
  }
  syncs_.stream(stream_, "divergence check");
  const std::vector<unsigned long long> counted = counts.download();
  std::vector<std::string> found;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (DivergenceLimits::diverged(counted[2 * i], counted[2 * i + 1], sizes[i]))
      found.push_back(names[i]);
  return found;
}

std::vector<DeviceArrayView> DeviceModel::arrays() const {
  std::vector<DeviceArrayView> out;
  for (const Groups* G : {&params, &grads, &m, &v})
    for (const auto& b : G->g) out.push_back({b.data(), b.size(), b.capacity()});
  return out;
}

std::size_t DeviceModel::bytes() const {
  std::size_t b = grad2d.capacity_bytes() + vis_count.capacity_bytes() +
                  grad2d_abs.capacity_bytes() + filter3d_.capacity_bytes() +
                  filter_cams_.capacity_bytes();
  for (const Groups* G : {&params, &grads, &m, &v})
    for (const auto& buffer : G->g) b += buffer.capacity_bytes();
  for (const auto* buffer : {&appearance.params, &appearance.grads, &appearance.m, &appearance.v})
    b += buffer->capacity_bytes();
  for (const auto* buffer : {&pose.params, &pose.m, &pose.v}) b += buffer->capacity_bytes();
  b += pose.steps.capacity_bytes();
  return b;
}

void DeviceModel::reset_adc_stats() {
  grad2d.resize(std::size_t(n));
  vis_count.resize(std::size_t(n));
  grad2d.zero(stream_);
  vis_count.zero(stream_);
  if (grad2d_abs_in_use()) reset_grad2d_abs();
}

void DeviceModel::reset_grad2d_abs() {
  grad2d_abs.resize(std::size_t(n));
  grad2d_abs.zero(stream_);
}

adc::Stats DeviceModel::adc_stats() const {
  adc::Stats st;
  st.grad2d = grad2d.download();
  st.count = vis_count.download();
  if (grad2d_abs.size() == grad2d.size()) st.grad2d_abs = grad2d_abs.download();
  return st;
}

void DeviceModel::set_adc_stats(const adc::Stats& st) {
  if (st.grad2d.size() != std::size_t(n) || st.count.size() != std::size_t(n) ||
      (!st.grad2d_abs.empty() && st.grad2d_abs.size() != std::size_t(n)))
    throw Error("set_adc_stats: statistics for " + std::to_string(st.count.size()) + " splats (" +
                std::to_string(st.grad2d_abs.size()) + " absolute sums), the model has " +
                std::to_string(n));
  grad2d.upload(st.grad2d);
  vis_count.upload(st.count);
  if (!st.grad2d_abs.empty()) grad2d_abs.upload(st.grad2d_abs);
  uploaded();
}

void DeviceModel::update_filter3d(std::span<const Camera> cameras) {
  std::vector<CameraParams> cams;
  for (const Camera& c : cameras) cams.push_back(CameraParams::from(c));
  const bool same_cams =
      cams.size() == filter_cams_host_.size() &&
      std::memcmp(cams.data(), filter_cams_host_.data(), cams.size() * sizeof(CameraParams)) == 0;
  if (!same_cams || filter3d_.size() != std::size_t(n)) {
    if (!same_cams) {
      filter_cams_.upload(cams);
      filter_cams_host_ = std::move(cams);
      uploaded();
    }
    filter3d_.resize(std::size_t(n));
    ++generation;
  }
  filter_on_ = true;
  filter3d_variances(n, params.g[0].data(), filter_cams_.data(), int(filter_cams_host_.size()),
                     filter3d_.data(), filter_fallback_.data(), stream_);
}

const float* DeviceModel::filter3d() const {
  if (!filter_on_) return nullptr;
  if (filter3d_.size() != std::size_t(n))
    throw Error("cuda backend: the 3D filter has " + std::to_string(filter3d_.size()) +
                " entries for " + std::to_string(n) +
                " splats (update_filter3d after every refine tick)");
  return filter3d_.data();
}

ModelSlots DeviceModel::slots() {
  ModelSlots sl{};
  const int widths[5] = {3, 3, 4, 1, 3 * sh_coeffs(sh_degree)};
  for (int g = 0; g < 5; ++g) {
    sl.params[g] = params.g[g].data();
    sl.m[g] = m.g[g].data();
    sl.v[g] = v.g[g].data();
    sl.width[g] = widths[g];
  }
  return sl;
}

DeviceBuffer<float> DeviceModel::fresh_buffer(const DeviceBuffer<float>& like, std::size_t size) {
  std::size_t cap = like.capacity();
  if (size > cap) cap = std::max(size, cap + cap / 2);
  DeviceBuffer<float> b(cap);
  b.resize(size);
  b.zero_tail(stream_);
  return b;
}

}  // namespace splat::cuda
