// MCMC's refine tick on the CUDA backend (strategy/mcmc/mcmc_strategy.h), with the kernels of
// mcmc_refine_cuda.h.
#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"
#include "cuda/buffer.h"
#include "cuda/refine_cuda.h"
#include "strategy/adc/adc_refine_cuda.h"  // gather_adc_stats
#include "strategy/mcmc/mcmc_refine_cuda.h"
#include "strategy/mcmc/mcmc_strategy.h"

namespace splat {

namespace {

// What the tick keeps between ticks (cuda::RefineScratch).
struct McmcTickScratch {
  cuda::ScratchGroup<cuda::McmcScratch, cuda::McmcSize> scratch;
  cuda::Pinned<std::int32_t> dead_host{1};
  std::size_t bytes() const { return scratch.bytes(); }
};

}  // namespace

// The MCMC tick on the device (cpu::mcmc_refine). A host wait for the dead count, which sizes the
// relocation and is part of the returned stats. Growth that outgrows an array moves it, keeping its
// contents, to room for s.max_count splats when given (one move in a run), else geometrically
// larger; the old array is freed once a wait has passed the copy out of it, so at most one array is
// held twice. A tick that only relocates (the count at its cap) rewrites the arrays in place: every
// buffer and shape stays, so the captured step graph stays valid and replays on.
RefineStats McmcTick::run_cuda(cuda::RefineContext& ctx) {
  using namespace cuda;
  DeviceModel& model = ctx.model;
  const McmcRefineSettings& s = settings;
  McmcTickScratch& keep = ctx.scratch.get<McmcTickScratch>();
  const int n = model.n;
  if (n == 0) return {};
  const std::size_t target = std::max(s.target_count, std::size_t(n));
  if (target > std::size_t(std::numeric_limits<int>::max()))
    throw Error("cuda backend: MCMC target of " + std::to_string(target) +
                " splats exceeds the int index range");
  const int add = int(target) - n;
  if (add > 0) ++model.generation;
  // The gradient statistics of the n splats weigh the draws (growth below keeps them in place).
  McmcGrads grads;
  if (s.grad_power > 0) {
    gather_adc_stats(ctx);
    grads = {model.grad2d.data(), model.vis_count.data(), s.grad_power};
  }

  const ModelSlots slots0 = model.slots();  // widths; pointers refreshed after growth
  const std::size_t room = std::max(target, s.max_count);
  if (add > 0)
    for (Groups* G : {&model.params, &model.grads, &model.m, &model.v})
      for (int g = 0; g < 5; ++g) {
        if (!model.holds(*G, g)) continue;
        const std::size_t width = std::size_t(slots0.width[g]);
        const DeviceBuffer<float> old =
            G->g[g].grow_keep(target * width, ctx.stream, s.max_count ? room * width : 0);
        if (old.data()) ctx.syncs.stream(ctx.stream, "mcmc_grow_copy");
      }

  const McmcScratch& scratch = keep.scratch.ensure({n, std::max(n, add)});
  mcmc_find_dead(n, model.params.g[3].data(), s.min_opacity, scratch, keep.dead_host.get(),
                 ctx.stream);
  ctx.syncs.stream(ctx.stream, "mcmc_dead_count");
  const int dead = *keep.dead_host.get();

  RefineStats stats;
  const ModelSlots sl = model.slots();
  if (dead > 0 && dead < n) {
    mcmc_relocate(sl, n, dead, s, grads, scratch, ctx.stream);
    stats.dead = std::size_t(dead);
  }
  if (add > 0) {
    mcmc_grow(sl, n, add, s, grads, scratch, ctx.stream);
    stats.added = std::size_t(add);
  }
  model.n = int(target);
  if (model.adc_stats_in_use()) model.reset_adc_stats();
  stats.count = target;
  return stats;
}

}  // namespace splat
