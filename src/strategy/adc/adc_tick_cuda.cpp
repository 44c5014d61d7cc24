// ADC's refine tick and opacity reset on the CUDA backend (strategy/adc/adc_strategy.h), with the
// kernels of adc_refine_cuda.h.
#include <climits>
#include <string>
#include <utility>

#include "core/error.h"
#include "cuda/buffer.h"
#include "cuda/refine_cuda.h"
#include "distributed/communicator.h"
#include "strategy/adc/adc_refine_cuda.h"
#include "strategy/adc/adc_strategy.h"

namespace splat {

namespace {

// What the tick keeps between ticks (cuda::RefineScratch).
struct AdcTickScratch {
  cuda::ScratchGroup<cuda::AdcScratch, int> scratch;
  cuda::Pinned<std::int32_t> totals_host{cuda::kAdcTotals};
  std::size_t bytes() const { return scratch.bytes(); }
};

}  // namespace

void cuda::gather_adc_stats(cuda::RefineContext& ctx) {
  cuda::DeviceModel& model = ctx.model;
  const std::size_t n = std::size_t(model.n);
  if (model.grad2d.size() != n) model.reset_adc_stats();
  if (ctx.comm.size() > 1) {  // every rank decides from the statistics of every rank's views
    ctx.comm.allreduce_sum_device(model.grad2d.data(), n, ctx.stream,
                                  "ADC statistics all-reduce (grad2d)");
    ctx.comm.allreduce_sum_device(model.vis_count.data(), n, ctx.stream,
                                  "ADC statistics all-reduce (count)");
    if (model.grad2d_abs.size() == n)
      ctx.comm.allreduce_sum_device(model.grad2d_abs.data(), n, ctx.stream,
                                    "ADC statistics all-reduce (grad2d_abs)");
  }
}

// The ADC tick on the device (cpu::adc_refine). Host waits: one for the totals (they size the new
// arrays and are the returned stats), and one before the old arrays are freed, since the
// compaction reads them. The model moves out of place into fresh arrays of at least the old
// capacity: survivors with their Adam moments, new slots with zero moments, tails zero.
RefineStats AdcTick::run_cuda(cuda::RefineContext& ctx) {
  using namespace cuda;
  DeviceModel& model = ctx.model;
  const AdcRefineSettings& s = settings;
  AdcTickScratch& keep = ctx.scratch.get<AdcTickScratch>();
  ++model.generation;
  const int n = model.n;
  if (n == 0) return {};
  if (n > INT_MAX / 3)
    throw Error("cuda backend: " + std::to_string(n) + " splats exceed the ADC scan's int range");
  cuda::gather_adc_stats(ctx);  // no statistics yet: zeros, nothing grows

  const AdcScratch& scratch = keep.scratch.ensure(n);
  adc_decide(n, model.params.in(), {model.grad2d.data(), model.vis_count.data()},
             adc::thresholds(s), scratch, keep.totals_host.get(), ctx.stream);
  ctx.syncs.stream(ctx.stream, "adc_totals");
  const std::int32_t* t = keep.totals_host.get();
  RefineStats r;
  r.cloned = std::size_t(t[kAdcCloned]);
  r.split = std::size_t(t[kAdcSplit]);
  r.count = compact_model(ctx, scratch, t, s.seed, "adc_compact");
  r.pruned = std::size_t(n) + r.cloned + r.split - r.count;
  return r;
}

namespace cuda {

std::size_t compact_model(RefineContext& ctx,
                          const AdcScratch& s,
                          const std::int32_t* t,
                          std::uint64_t seed,
                          const char* what) {
  DeviceModel& model = ctx.model;
  const int n = model.n, children = t[kAdcChildren];
  const std::size_t m =
      std::size_t(t[kAdcKept]) + std::size_t(t[kAdcClones]) + 2 * std::size_t(children);
  if (m > std::size_t(INT_MAX))
    throw Error("cuda backend: a refine tick would make " + std::to_string(m) + " splats");
  const ModelSlots src = model.slots();
  Groups next_params, next_m, next_v;
  ModelSlots dst = src;
  for (int g = 0; g < 5; ++g) {
    const std::size_t size = m * std::size_t(src.width[g]);
    next_params.g[g] = model.fresh_buffer(model.params.g[g], size);
    next_m.g[g] = model.fresh_buffer(model.m.g[g], size);
    next_v.g[g] = model.fresh_buffer(model.v.g[g], size);
    dst.params[g] = next_params.g[g].data();
    dst.m[g] = next_m.g[g].data();
    dst.v[g] = next_v.g[g].data();
  }
  adc_compact(src, dst, n, children, seed, s, ctx.stream);
  std::swap(model.params, next_params);
  std::swap(model.m, next_m);
  std::swap(model.v, next_v);
  // Gradients are zero between steps; only their size changes (nothing reads them now).
  for (int g = 0; g < 5; ++g) {
    if (!model.holds(model.grads, g)) continue;
    model.grads.g[g].resize(m * std::size_t(src.width[g]));
    model.grads.g[g].zero(ctx.stream);
    model.grads.g[g].zero_tail(ctx.stream);
  }
  model.n = int(m);
  model.reset_adc_stats();
  ctx.syncs.stream(ctx.stream, what);  // next_* hold the old arrays, freed on return
  return m;
}

}  // namespace cuda

RefineStats OpacityResetTick::run_cuda(cuda::RefineContext& ctx) {
  cuda::DeviceModel& model = ctx.model;
  cuda::adc_reset_opacity(model.n, adc::logit_threshold(double(max_opacity)),
                          model.params.g[3].data(), model.m.g[3].data(), model.v.g[3].data(),
                          ctx.stream);
  return {.count = std::size_t(model.n)};
}

}  // namespace splat
