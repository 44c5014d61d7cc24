#pragma once
// The run's densification strategy (strategy/strategy.h) from its configuration.
#include <memory>
#include <vector>

#include "io/dataset.h"
#include "strategy/strategy.h"
#include "train/config.h"

namespace splat {

// The strategy densify.strategy names; scene_extent is what ADC's scale thresholds are relative
// to (the trainer's scene_extent()); views: the trainer's training views, for a strategy whose
// ticks render them (null: only projected counts are asked for); coverage: the subject's share of
// the training pixels (training_coverage), which MCMC scales its regularizers by.
std::unique_ptr<Densifier> make_densifier(const Config& cfg,
                                          double scene_extent,
                                          const TrainingViews* views = nullptr,
                                          double coverage = 1.0);

// The share of the training views' pixels the subject covers: the mean alpha of RGBA images
// composited on the background (an object cut out of its surroundings), 1 for RGB images and
// masked ones (whose loss counts only the mask's pixels).
double training_coverage(const std::vector<View>& train);

}  // namespace splat
