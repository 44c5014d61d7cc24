#include "train/densify.h"

namespace splat {

std::unique_ptr<Densifier> make_densifier(const Config& cfg,
                                          double scene_extent,
                                          const TrainingViews* views,
                                          double coverage) {
  return make_densifier(
      StrategyContext{cfg.densify, cfg.train.seed, scene_extent, coverage, views});
}

double training_coverage(const std::vector<View>& train) {
  double covered = 0, pixels = 0;
  for (const View& v : train) {
    covered += v.coverage * double(v.image.pixels());
    pixels += double(v.image.pixels());
  }
  return pixels > 0 ? covered / pixels : 1.0;
}

}  // namespace splat
