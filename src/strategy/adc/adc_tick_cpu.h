#pragma once
// ADC's refine tick and opacity reset on the CPU reference backend (3DGS, Kerbl et al. 2023;
// gsplat's DefaultStrategy), the specification the CUDA ticks follow (adc_tick_cuda.cpp). Naive
// loops.
#include <cstdint>
#include <span>

#include "engine/adc.h"
#include "engine/backend.h"
#include "strategy/adc/adc_strategy.h"

namespace splat::cpu {

struct RefineContext;

// Where a slot of a refined model comes from: a surviving splat, a clone of one, or one of the
// two children of a split one (indices before the tick).
enum class Kind { Kept, Clone, Child0, Child1 };
struct Source {
  std::uint32_t index;
  Kind kind;
};

// The refined state whose slot j comes from out[j]: kept splats keep their Adam moments, new ones
// start from zero; split children are placed by adc::split_offset (counter RNG seed `seed`) with
// the parent's scale / 1.6, and otherwise copy the parent, as clones do.
void compact(TrainState& st, std::span<const Source> out, std::uint64_t seed);

// One refine tick on the state (AdcTick); stats must hold one entry per splat and are reset to
// zeros for the new count afterwards.
RefineStats adc_refine(TrainState& st, adc::Stats& stats, const AdcRefineSettings& settings);

// ctx.adc_stats ready for a tick that reads them: one entry per splat (zeros if no step gathered
// any since the count changed), summed over the ranks of a data-parallel job so that every rank
// decides from the statistics of the whole batch.
void gather_adc_stats(RefineContext& ctx);

// raw_opacity = min(raw_opacity, logit(max_opacity)); zero Adam moments of the opacity group.
void adc_reset_opacity(TrainState& st, float max_opacity);

}  // namespace splat::cpu
