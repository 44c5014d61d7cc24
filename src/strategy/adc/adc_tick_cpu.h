#pragma once
// ADC's refine tick and opacity reset on the CPU reference backend (3DGS, Kerbl et al. 2023;
// gsplat's DefaultStrategy), the specification the CUDA ticks follow (adc_tick_cuda.cpp). Naive
// loops.
#include "engine/adc.h"
#include "engine/backend.h"
#include "strategy/adc/adc_strategy.h"

namespace splat::cpu {

// One refine tick on the state (AdcTick); stats must hold one entry per splat and are reset to
// zeros for the new count afterwards.
RefineStats adc_refine(TrainState& st, adc::Stats& stats, const AdcRefineSettings& settings);

// raw_opacity = min(raw_opacity, logit(max_opacity)); zero Adam moments of the opacity group.
void adc_reset_opacity(TrainState& st, float max_opacity);

}  // namespace splat::cpu
