#pragma once
// The CPU backend's refine context (engine/refine.h): what a refine tick's run_cpu works on.
#include <vector>

#include "core/image.h"
#include "engine/backend.h"

namespace splat::dist {
class Communicator;
}

namespace splat::cpu {

struct RefineContext {
  TrainState& state;  // parameters, Adam moments, the count (state.params.size())
  // ADC's statistics of the steps since the last tick (StepPlan::accumulate_grad2d): one entry
  // per splat or empty. Per rank until a tick all-reduces them; a tick that changes the count
  // resets them to its new count.
  adc::Stats& adc_stats;
  dist::Communicator& comm;  // the ranks of a data-parallel job
  // A tick that scores training views (FastGS-style) renders the model with
  // cpu::render_fwd(state.params, camera, settings, state.filter3d) (cpu/pipeline.h) and compares
  // the render with these training images (Backend::set_images order; engine/target.h).
  const std::vector<const Image8*>& images;
};

}  // namespace splat::cpu
