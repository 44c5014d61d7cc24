#include "train/auto_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "train/init.h"
#include "train/time_budget.h"

namespace splat {

std::int64_t auto_cap_max(double train_megapixels, std::size_t initial_splats) {
  const auto by_pixels = std::int64_t(std::llround(5000.0 * train_megapixels / 1e4) * 1e4);
  return std::max(std::clamp<std::int64_t>(by_pixels, 100000, 3000000),
                  2 * std::int64_t(initial_splats));
}

std::int64_t auto_iterations(double train_megapixels, std::size_t views) {
  const double steps = std::max(kAutoCaptureSteps / std::max(train_megapixels, 1e-9),
                                kAutoStepsPerView * double(views));
  // Both bounds are whole hundreds, so clamping before rounding to hundreds keeps them exact.
  return 100 *
         std::llround(std::clamp(steps, double(kAutoMinIterations), double(kAutoIterations)) / 100);
}

int auto_coarse_factor(int smallest_side) {
  int f = 4;
  while (f > 1 && smallest_side / f < 32) f /= 2;
  return f;
}

std::vector<AutoChoice> resolve_auto(Config& cfg, const Dataset& data) {
  std::vector<AutoChoice> chosen;
  char why[160];
  double pixels = 0;
  for (const View& v : data.train) pixels += double(v.camera.width) * double(v.camera.height);
  if (cfg.train.iterations == 0) {
    const std::size_t views = data.train.size();
    const std::int64_t n = auto_iterations(pixels / 1e6, views);
    Config recipe = cfg;
    recipe.train.iterations = kAutoIterations;
    cfg = compressed_recipe(recipe, double(n) / double(kAutoIterations));
    std::snprintf(why, sizeof why,
                  "30,000 (3DGS's), fewer on many pixels: %.0f / %.1f training MP, at least "
                  "%.0f x %zu views and %lld",
                  kAutoCaptureSteps, pixels / 1e6, kAutoStepsPerView, views,
                  (long long)kAutoMinIterations);
    chosen.push_back({"train.iterations", cfg.train.iterations, why});
    if (n < kAutoIterations) {
      const char* scaled = "the 30,000-step recipe's, compressed to the iterations";
      chosen.push_back({"densify.refine_start", cfg.densify.refine_start, scaled});
      chosen.push_back({"densify.refine_stop", cfg.densify.refine_stop, scaled});
      chosen.push_back({"train.sh_increase_every", cfg.train.sh_increase_every, scaled});
    }
  }
  if (cfg.densify.cap_max == 0) {
    const bool from_points = init_uses_points(cfg.model, data);
    const std::size_t initial =
        from_points ? data.points->positions.size() / 3 : std::size_t(cfg.model.init_points);
    cfg.densify.cap_max = auto_cap_max(pixels / 1e6, initial);
    std::snprintf(
        why, sizeof why,
        "5000 per training megapixel (%.1f MP), within [100k, 3M], at least 2 x %zu initial",
        pixels / 1e6, initial);
    if (cfg.densify.strategy == "mcmc")
      chosen.push_back({"densify.cap_max", cfg.densify.cap_max, why});
  }
  if (cfg.train.coarse_factor == 0) {
    int side = std::numeric_limits<int>::max();
    for (const View& v : data.train) side = std::min({side, v.camera.width, v.camera.height});
    cfg.train.coarse_factor = auto_coarse_factor(side);
    std::snprintf(why, sizeof why,
                  "4, or less to keep the smallest image side (%d px) at 32 px or more", side);
    chosen.push_back({"train.coarse_factor", cfg.train.coarse_factor, why});
  }
  if (cfg.train.coarse_until == 0 && cfg.train.coarse_factor > 1) {
    cfg.train.coarse_until = std::max<std::int64_t>(1, cfg.train.iterations / 2);
    chosen.push_back({"train.coarse_until", cfg.train.coarse_until, "half of the iterations"});
  }
  return chosen;
}

}  // namespace splat
