#include "train/densify.h"

namespace splat {

std::unique_ptr<Densifier> make_densifier(const Config& cfg,
                                          double scene_extent,
                                          const TrainingViews* views) {
  return make_densifier(StrategyContext{cfg.densify, cfg.train.seed, scene_extent, views});
}

}  // namespace splat
