#include "train/auto_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "engine/target.h"
#include "train/init.h"
#include "train/time_budget.h"

namespace splat {

double edge_megapixels(const std::vector<View>& views) {
  std::array<float, 256> unit;  // k / 255, as target_sample divides
  for (int k = 0; k < 256; ++k) unit[k] = div_rn(float(k), 255.0f);
  const auto sample = [&unit](std::uint8_t k) { return unit[k]; };
  const float strong = kEdgeStep * kEdgeStep;
  std::int64_t edges = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : edges)
  for (std::size_t i = 0; i < views.size(); ++i) {
    const Image8& img = views[i].image;
    const TargetFormat f = target_format(img);
    const std::size_t w = std::size_t(img.width), c = std::size_t(img.channels);
    std::vector<float> y(img.pixels());  // luminance: the mean of the target's RGB
    for (std::size_t p = 0; p < y.size(); ++p) {
      const std::uint8_t* px = &img.data[p * c];
      y[p] = (target_sample(f, px, 0, sample) + target_sample(f, px, 1, sample) +
              target_sample(f, px, 2, sample)) /
             3;
    }
    for (std::size_t p = 0; p + w < y.size(); ++p) {
      if ((p + 1) % w == 0) continue;  // the last column has no right neighbour
      const float dx = y[p + 1] - y[p], dy = y[p + w] - y[p];
      edges += dx * dx + dy * dy > strong;
    }
  }
  return double(edges) / 1e6;
}

std::int64_t auto_cap_max(double train_megapixels, double edge_mp, std::size_t initial_splats) {
  const double splats = std::max(5000.0 * train_megapixels, kSplatsPerEdgeMegapixel * edge_mp);
  const auto rounded = std::int64_t(std::llround(splats / 1e4) * 1e4);
  return std::max(std::clamp<std::int64_t>(rounded, 100000, 3000000),
                  2 * std::int64_t(initial_splats));
}

std::int64_t steps_for_splats(std::int64_t iterations,
                              double megapixels_per_view,
                              std::int64_t pixel_cap,
                              std::int64_t cap) {
  if (cap <= pixel_cap) return iterations;
  const double cost =
      (megapixels_per_view + double(pixel_cap) / 1e6) / (megapixels_per_view + double(cap) / 1e6);
  return std::max<std::int64_t>(100 * std::llround(double(iterations) * cost / 100),
                                std::min(iterations, kAutoMinIterations));
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
  char why[200];
  double pixels = 0;
  for (const View& v : data.train) pixels += double(v.camera.width) * double(v.camera.height);
  const double mp = pixels / 1e6;
  const std::size_t views = data.train.size();
  // The splat cap first: when the capture's detail asks for more splats than its pixels, the
  // steps pay for them. Only MCMC has a cap; the other strategies keep the pixel rule's, unused.
  const bool mcmc = cfg.densify.strategy == "mcmc";
  std::optional<AutoChoice> cap;
  std::int64_t pixel_cap = cfg.densify.cap_max;
  if (cfg.densify.cap_max == 0) {
    const bool from_points = init_uses_points(cfg.model, data);
    const std::size_t initial =
        from_points ? data.points->positions.size() / 3 : std::size_t(cfg.model.init_points);
    const double edges = mcmc ? edge_megapixels(data.train) : 0.0;
    pixel_cap = auto_cap_max(mp, 0.0, initial);
    cfg.densify.cap_max = auto_cap_max(mp, edges, initial);
    std::snprintf(why, sizeof why,
                  "the larger of 5000 per training megapixel (%.1f MP) and %.0f per edge megapixel "
                  "(%.2f), within [100k, 3M], at least 2 x %zu initial",
                  mp, kSplatsPerEdgeMegapixel, edges, initial);
    if (mcmc) cap = AutoChoice{"densify.cap_max", cfg.densify.cap_max, why};
  }
  if (cfg.train.iterations == 0) {
    std::int64_t n = auto_iterations(mp, views);
    const bool traded = cfg.densify.cap_max > pixel_cap;
    if (traded)
      n = steps_for_splats(n, mp / double(std::max<std::size_t>(views, 1)), pixel_cap,
                           cfg.densify.cap_max);
    Config recipe = cfg;
    recipe.train.iterations = kAutoIterations;
    cfg = compressed_recipe(recipe, double(n) / double(kAutoIterations));
    std::snprintf(
        why, sizeof why,
        "30,000 (3DGS's), fewer on many pixels: %.0f / %.1f training MP, at least "
        "%.0f x %zu views and %lld%s",
        kAutoCaptureSteps, mp, kAutoStepsPerView, views, (long long)kAutoMinIterations,
        traded ? "; then fewer for the cap's splats beyond the pixels' (the same time)" : "");
    chosen.push_back({"train.iterations", cfg.train.iterations, why});
    if (n < kAutoIterations) {
      const char* scaled = "the 30,000-step recipe's, compressed to the iterations";
      chosen.push_back({"densify.refine_start", cfg.densify.refine_start, scaled});
      chosen.push_back({"densify.refine_stop", cfg.densify.refine_stop, scaled});
      chosen.push_back({"train.sh_increase_every", cfg.train.sh_increase_every, scaled});
    }
  }
  if (cap) chosen.push_back(*cap);
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
