// The CUDA backend's refine ticks (render/backend.h): MCMC relocation and growth, ADC clone, split
// and prune, and the opacity reset. Each drains the step engine first and changes the model's
// buffers only with nothing in flight.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda/adc.h"
#include "cuda/backend_impl.h"
#include "cuda/mcmc.h"
#include "dist/communicator.h"
#include "render/adc.h"

namespace splat::cuda {

// One MCMC tick (cpu::mcmc_refine). Host waits: the drain, then one for the dead count, which
// sizes the relocation and is part of the returned stats. Growth reallocates the model arrays
// geometrically, keeping their contents; the old storage lives until that wait has passed the
// copies out of it. A tick that only relocates (the count at its cap) rewrites the arrays in
// place: every buffer and shape stays, so the captured step graph stays valid and replays on.
RefineStats CudaBackend::mcmc_refine(const McmcRefineSettings& s) {
  drain();
  assert_idle("an MCMC refine");
  const int n = n_;
  if (n == 0) return {};
  const std::size_t target = std::max(s.target_count, std::size_t(n));
  if (target > std::size_t(std::numeric_limits<int>::max()))
    throw Error("cuda backend: MCMC target of " + std::to_string(target) +
                " splats exceeds the int index range");
  const int add = int(target) - n;
  if (add > 0) ++generation_;

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
    mcmc_relocate(sl, n, dead, s, scratch, stream_);
    stats.dead = std::size_t(dead);
  }
  if (add > 0) {
    mcmc_grow(sl, n, add, s, scratch, stream_);
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
RefineStats CudaBackend::adc_refine(const AdcRefineSettings& s) {
  drain();
  assert_idle("an ADC refine");
  ++generation_;
  const int n = n_;
  if (n == 0) return {};
  if (n > INT_MAX / 3)
    throw Error("cuda backend: " + std::to_string(n) + " splats exceed the ADC scan's int range");
  if (grad2d_.size() != std::size_t(n)) reset_adc_stats();  // no statistics yet: nothing grows
  if (comm_->size() > 1) {  // every rank decides from the statistics of every rank's views
    comm_->allreduce_sum_device(grad2d_.data(), grad2d_.size(), stream_,
                                "ADC statistics all-reduce (grad2d)");
    comm_->allreduce_sum_device(vis_count_.data(), vis_count_.size(), stream_,
                                "ADC statistics all-reduce (count)");
  }

  const AdcScratch& scratch = adc_scratch_.ensure(n);
  adc_decide(n, params_.in(), {grad2d_.data(), vis_count_.data()}, adc::thresholds(s), scratch,
             adc_totals_host_.get(), stream_);
  syncs_.stream(stream_, "adc_totals");
  const std::int32_t* t = adc_totals_host_.get();
  const int children = t[kAdcChildren];
  const std::size_t m =
      std::size_t(t[kAdcKept]) + std::size_t(t[kAdcClones]) + 2 * std::size_t(children);
  if (m > std::size_t(INT_MAX))
    throw Error("cuda backend: ADC would make " + std::to_string(m) + " splats");
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

void CudaBackend::adc_reset_opacity(float max_opacity) {
  drain();  // a step abandoned for overflow would be queued again after the reset
  cuda::adc_reset_opacity(n_, adc::logit_threshold(double(max_opacity)), params_.g[3].data(),
                          m_.g[3].data(), v_.g[3].data(), stream_);
}

// The proof a refine tick may change buffers: the stream is idle and no step is queued.
void CudaBackend::assert_idle(const char* before) {
  if (cudaStreamQuery(stream_) != cudaSuccess || !pending_.empty())
    throw Error(std::string("cuda backend: work still in flight after the drain before ") + before);
}

void CudaBackend::reset_adc_stats() {
  grad2d_.resize(std::size_t(n_));
  vis_count_.resize(std::size_t(n_));
  grad2d_.zero(stream_);
  vis_count_.zero(stream_);
}

// `size` floats with at least `like`'s capacity (geometric growth past it) and a zero tail;
// [0, size) is for the caller to write.
DeviceBuffer<float> CudaBackend::fresh_buffer(const DeviceBuffer<float>& like, std::size_t size) {
  std::size_t cap = like.capacity();
  if (size > cap) cap = std::max(size, cap + cap / 2);
  DeviceBuffer<float> b(cap);
  b.resize(size);
  b.zero_tail(stream_);
  return b;
}

McmcSlots CudaBackend::slots() {
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

}  // namespace splat::cuda
