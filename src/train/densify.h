#pragma once
// The run's densification strategy (strategy/strategy.h) from its configuration.
#include <memory>

#include "strategy/strategy.h"
#include "train/config.h"

namespace splat {

// The strategy densify.strategy names; scene_extent is what ADC's scale thresholds are relative
// to (the trainer's scene_extent()); views: the trainer's training views, for a strategy whose
// ticks render them (null: only projected counts are asked for).
std::unique_ptr<Densifier> make_densifier(const Config& cfg,
                                          double scene_extent,
                                          const TrainingViews* views = nullptr);

}  // namespace splat
