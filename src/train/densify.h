#pragma once
// The run's densification strategy (strategy/strategy.h) from its configuration.
#include <memory>

#include "strategy/strategy.h"
#include "train/config.h"

namespace splat {

// The strategy densify.strategy names; scene_extent is what ADC's scale thresholds are relative
// to (the trainer's scene_extent()).
std::unique_ptr<Densifier> make_densifier(const Config& cfg, double scene_extent);

}  // namespace splat
