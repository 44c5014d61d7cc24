// The refine ticks on the device (cuda/refine.h). Each runs with nothing in flight, so it may
// replace the model's buffers.
#include "cuda/refine.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "engine/adc.h"

namespace splat::cuda {

// One MCMC tick (cpu::mcmc_refine). A host wait for the dead count, which sizes the relocation and
// is part of the returned stats. Growth that outgrows an array moves it, keeping its contents, to
// room for s.max_count splats when given (one move in a run), else geometrically larger; the old
// array is freed once a wait has passed the copy out of it, so at most one array is held twice.
// A tick that only relocates (the count at its cap) rewrites the arrays in place: every buffer
// and shape stays, so the captured step graph stays valid and replays on.
RefineStats Refiner::mcmc(DeviceModel& model, const McmcRefineSettings& s) {
  const int n = model.n;
  if (n == 0) return {};
  const std::size_t target = std::max(s.target_count, std::size_t(n));
  if (target > std::size_t(std::numeric_limits<int>::max()))
    throw Error("cuda backend: MCMC target of " + std::to_string(target) +
                " splats exceeds the int index range");
  const int add = int(target) - n;
  if (add > 0) ++model.generation;

  const McmcSlots slots0 = model.slots();  // widths; pointers refreshed after growth
  const std::size_t room = std::max(target, s.max_count);
  if (add > 0)
    for (Groups* G : {&model.params, &model.grads, &model.m, &model.v})
      for (int g = 0; g < 5; ++g) {
        if (!model.holds(*G, g)) continue;
        const std::size_t width = std::size_t(slots0.width[g]);
        const DeviceBuffer<float> old =
            G->g[g].grow_keep(target * width, stream_, s.max_count ? room * width : 0);
        if (old.data()) syncs_.stream(stream_, "mcmc_grow_copy");
      }

  const McmcScratch& scratch = mcmc_scratch_.ensure({n, std::max(n, add)});
  mcmc_find_dead(n, model.params.g[3].data(), s.min_opacity, scratch, dead_host_.get(), stream_);
  syncs_.stream(stream_, "mcmc_dead_count");
  const int dead = *dead_host_.get();

  RefineStats stats;
  const McmcSlots sl = model.slots();
  if (dead > 0 && dead < n) {
    mcmc_relocate(sl, n, dead, s, scratch, stream_);
    stats.dead = std::size_t(dead);
  }
  if (add > 0) {
    mcmc_grow(sl, n, add, s, scratch, stream_);
    stats.added = std::size_t(add);
  }
  model.n = int(target);
  if (model.adc_stats_in_use()) model.reset_adc_stats();
  stats.count = target;
  return stats;
}

// One ADC tick (cpu::adc_refine). Host waits: one for the totals (they size the new
// arrays and are the returned stats), and one before the old arrays are freed, since the
// compaction reads them. The model moves out of place into fresh arrays of at least the old
// capacity: survivors with their Adam moments, new slots with zero moments, tails zero.
RefineStats Refiner::adc(DeviceModel& model, const AdcRefineSettings& s, dist::Communicator& comm) {
  ++model.generation;
  const int n = model.n;
  if (n == 0) return {};
  if (n > INT_MAX / 3)
    throw Error("cuda backend: " + std::to_string(n) + " splats exceed the ADC scan's int range");
  if (model.grad2d.size() != std::size_t(n))
    model.reset_adc_stats();  // no statistics yet: nothing grows
  if (comm.size() > 1) {      // every rank decides from the statistics of every rank's views
    comm.allreduce_sum_device(model.grad2d.data(), model.grad2d.size(), stream_,
                              "ADC statistics all-reduce (grad2d)");
    comm.allreduce_sum_device(model.vis_count.data(), model.vis_count.size(), stream_,
                              "ADC statistics all-reduce (count)");
    if (model.grad2d_abs.size() == std::size_t(n))
      comm.allreduce_sum_device(model.grad2d_abs.data(), model.grad2d_abs.size(), stream_,
                                "ADC statistics all-reduce (grad2d_abs)");
  }

  const AdcScratch& scratch = adc_scratch_.ensure(n);
  adc_decide(n, model.params.in(), {model.grad2d.data(), model.vis_count.data()},
             adc::thresholds(s), scratch, adc_totals_host_.get(), stream_);
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

  const McmcSlots src = model.slots();
  Groups next_params, next_m, next_v;
  McmcSlots dst = src;
  for (int g = 0; g < 5; ++g) {
    const std::size_t size = m * std::size_t(src.width[g]);
    next_params.g[g] = model.fresh_buffer(model.params.g[g], size);
    next_m.g[g] = model.fresh_buffer(model.m.g[g], size);
    next_v.g[g] = model.fresh_buffer(model.v.g[g], size);
    dst.params[g] = next_params.g[g].data();
    dst.m[g] = next_m.g[g].data();
    dst.v[g] = next_v.g[g].data();
  }
  adc_compact(src, dst, n, children, s.seed, scratch, stream_);
  std::swap(model.params, next_params);
  std::swap(model.m, next_m);
  std::swap(model.v, next_v);
  // Gradients are zero between steps; only their size changes (nothing reads them now).
  for (int g = 0; g < 5; ++g) {
    if (!model.holds(model.grads, g)) continue;
    model.grads.g[g].resize(m * std::size_t(src.width[g]));
    model.grads.g[g].zero(stream_);
    model.grads.g[g].zero_tail(stream_);
  }
  model.n = int(m);
  model.reset_adc_stats();
  syncs_.stream(stream_, "adc_compact");  // next_* hold the old arrays, freed on return
  return r;
}

void Refiner::reset_opacity(DeviceModel& model, float max_opacity) {
  adc_reset_opacity(model.n, adc::logit_threshold(double(max_opacity)), model.params.g[3].data(),
                    model.m.g[3].data(), model.v.g[3].data(), stream_);
}

}  // namespace splat::cuda
