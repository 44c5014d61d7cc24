#include "train/resolution.h"

#include <bit>

#include "core/error.h"
#include "engine/target.h"
#include "io/image_io.h"

namespace splat {

int resolution_factor(const TrainConfig& t, std::int64_t completed) {
  if (t.coarse_factor <= 1 || completed >= t.coarse_until) return 1;
  const std::int64_t halvings = std::bit_width(std::uint64_t(t.coarse_factor)) - 1;
  return int(t.coarse_factor >> (completed * halvings / t.coarse_until));
}

StepChanges resolution_changes(const TrainConfig& t, std::int64_t completed, std::int64_t total) {
  StepChanges out;
  if (t.coarse_factor <= 1 || t.coarse_until <= 0) return out;
  const std::int64_t halvings = std::bit_width(std::uint64_t(t.coarse_factor)) - 1;
  for (std::int64_t j = 1; j <= halvings; ++j) {
    // The first k with k * halvings / until >= j.
    const std::int64_t k = (j * t.coarse_until + halvings - 1) / halvings;
    const bool listed = !out.empty() && out.back().first == k;  // until < halvings: several at k
    if (k >= completed && k < total && !listed)
      out.emplace_back(k, std::size_t(resolution_factor(t, k)));
  }
  return out;
}

Image8 downscaled_training_image(const Image8& img, int factor) {
  const Image rgb = target_image(img);  // composited, or the RGB under a mask
  Image full(img.width, img.height, img.masked() ? 4 : 3);
  const std::vector<float> weights = img.masked() ? target_weights(img) : std::vector<float>{};
  for (std::size_t i = 0; i < img.pixels(); ++i) {
    for (int c = 0; c < 3; ++c) full.data[i * full.channels + c] = rgb.data[3 * i + c];
    if (img.masked()) full.data[4 * i + 3] = weights[i];
  }
  Image8 out = to_image8(downscale(full, factor));
  out.background = img.background;
  if (img.masked()) {
    out.alpha = AlphaUse::mask;
    // Where no pixel keeps half of its block, any kept part keeps it: the loss needs a pixel.
    bool half_kept = false;
    for (std::size_t i = 0; i < out.pixels(); ++i) half_kept |= out.data[4 * i + 3] >= 128;
    const int threshold = half_kept ? 128 : 1;
    for (std::size_t i = 0; i < out.pixels(); ++i)
      out.data[4 * i + 3] = out.data[4 * i + 3] >= threshold ? 255 : 0;
  }
  return out;
}

TrainingLevel training_level(const std::vector<View>& views, int factor, const std::string& who) {
  for (const View& v : views)  // checked here: nothing may throw in the parallel loop
    if (v.image.width / factor == 0 || v.image.height / factor == 0)
      throw Error(who + " = " + std::to_string(factor) + " is larger than " + v.path + " (" +
                  std::to_string(v.image.width) + "x" + std::to_string(v.image.height) +
                  " as loaded)");
  TrainingLevel level;
  level.factor = factor;
  level.images.resize(views.size());
  level.cameras.resize(views.size());
#pragma omp parallel for schedule(dynamic)
  for (std::size_t i = 0; i < views.size(); ++i) {
    level.images[i] = downscaled_training_image(views[i].image, factor);
    level.cameras[i] = views[i].camera.downscaled(factor);
  }
  return level;
}

}  // namespace splat
