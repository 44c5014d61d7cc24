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

// The share of the training pixels the subject covers: View::coverage over the views, weighted by
// their pixels. 1 for photographs; Lego 0.304, the demo scene 0.183.
double training_coverage(const std::vector<View>& train);

}  // namespace splat
