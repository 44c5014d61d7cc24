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
    const Image8& im = v.image;
    pixels += double(im.pixels());
    // Alpha composited on the background; an RGB or a masked image is all subject.
    if (im.channels != 4 || im.masked()) {
      covered += double(im.pixels());
      continue;
    }
    std::uint64_t alpha = 0;
    for (std::size_t i = 0; i < im.pixels(); ++i) alpha += im.data[4 * i + 3];
    covered += double(alpha) / 255.0;
  }
  return pixels > 0 ? covered / pixels : 1.0;
}

}  // namespace splat
