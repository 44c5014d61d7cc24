// The pieces behind the progress line and the defaults: the smoothed loss, the step-time model
// and ETA, MCMC's projected splat counts, and the choices of the auto config keys.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backend.h"
#include "io/demo_scene.h"
#include "report/progress.h"
#include "test_util.h"
#include "train/auto_config.h"
#include "train/backend_factory.h"
#include "train/densify.h"
#include "train/trainer.h"

namespace splat {
namespace {

TEST(Progress, SmoothedLossIsBiasCorrected) {
  Smoothed s(0.9);
  s.add(2.0);
  EXPECT_DOUBLE_EQ(s.value(), 2.0);  // not 0.2: the first value is the mean so far
  for (int i = 0; i < 200; ++i) s.add(1.0);
  EXPECT_NEAR(s.value(), 1.0, 1e-6);
}

TEST(Progress, StepCostFitsFixedAndPerSplatParts) {
  StepCost c;
  // 1 ms fixed + 2 ms per million splats, sampled as the count grows.
  for (std::size_t n = 100000; n <= 1000000; n += 100000) c.add(n, 1e-3 + 2e-9 * double(n));
  EXPECT_NEAR(c.seconds_per_step(2000000), 5e-3, 1e-9);
  // 100 steps at 1M, then 100 at 2M after a tick at step 1100.
  const double left = c.remaining(1000, 1200, 1000000, {{1100, 2000000}});
  EXPECT_NEAR(left, 100 * 3e-3 + 100 * 5e-3, 1e-9);
}

TEST(Progress, StepCostWithoutSpreadIsProportional) {
  StepCost c;
  c.add(1000, 0.01);
  c.add(1000, 0.01);
  EXPECT_NEAR(c.seconds_per_step(2000), 0.02, 1e-12);
  EXPECT_NEAR(c.remaining(0, 10, 1000, {}), 0.1, 1e-12);
}

// A resolution measured at one count only takes the time per splat of the nearest resolution
// whose samples span a range (here factor 4: 0.3 ms + 2 ms per million splats): at 600k splats a
// 1/2-size step measured as 1.5 ms at 300k costs 1.5 + 0.6 ms, not twice 1.5 ms.
TEST(Progress, StepCostBorrowsTheTimePerSplatOfAFittedResolution) {
  StepCost c;
  c.add(100000, 0.3e-3 + 2e-9 * 100000, 4);
  c.add(300000, 0.3e-3 + 2e-9 * 300000, 4);
  c.add(300000, 1.5e-3, 2);
  EXPECT_NEAR(c.seconds_per_step(600000, 2), 1.5e-3 + 2e-9 * 300000, 1e-12);
  EXPECT_NEAR(c.seconds_per_step(600000, 4), 0.3e-3 + 2e-9 * 600000, 1e-12);
}

// Coarse-to-fine: each resolution has its own fit; one not measured yet comes from the two
// nearest, linear in the pixels per step (here 1 ms per step + 8 ms at full resolution's pixels),
// or from a single one as proportional to the square root of the image side.
TEST(Progress, StepCostPredictsResolutionsNotMeasuredYet) {
  auto truth = [](int factor) { return 1e-3 + 8e-3 / double(factor * factor); };
  StepCost c;
  c.add(1000, truth(4), 4);
  EXPECT_NEAR(c.seconds_per_step(1000, 4), truth(4), 1e-12);
  EXPECT_NEAR(c.seconds_per_step(1000, 1), 2 * truth(4), 1e-12);  // side 4x: a guess, 2x
  EXPECT_NEAR(c.seconds_per_step(1000, 2), std::sqrt(2.0) * truth(4), 1e-12);
  c.add(1000, truth(2), 2);
  EXPECT_NEAR(c.seconds_per_step(1000, 2), truth(2), 1e-12);
  EXPECT_NEAR(c.seconds_per_step(1000, 1), truth(1), 1e-12);
  EXPECT_NEAR(c.seconds_per_step(1000, 8), truth(8), 1e-12);
  // 10 steps at factor 2, then 20 at full resolution after a change at step 110.
  EXPECT_NEAR(c.remaining(100, 130, 1000, {}, 2, {{110, 1}}), 10 * truth(2) + 20 * truth(1), 1e-12);
  // Count and resolution changes interleaved: 1000 splats to step 105, 2000 after (the
  // proportional fit doubles the time), factor 2 to step 110, full resolution after.
  EXPECT_NEAR(c.remaining(100, 130, 1000, {{105, 2000}}, 2, {{110, 1}}),
              5 * truth(2) + 5 * 2 * truth(2) + 20 * 2 * truth(1), 1e-12);
}

// Fits of two resolutions at different counts, extrapolated far, can cross: here the factor-4
// fit (steep, 3 ms per million splats) predicts more at 3M than the factor-2 fit (flat). The full
// resolution must not come out cheaper than either measured one, let alone free.
TEST(Progress, StepCostNeverPredictsMorePixelsCheaper) {
  StepCost c;
  c.add(100000, 0.3e-3, 4);
  c.add(200000, 0.6e-3, 4);
  c.add(250000, 0.75e-3, 2);
  c.add(320000, 0.80e-3, 2);
  const std::size_t n = 3000000;
  ASSERT_GT(c.seconds_per_step(n, 4), c.seconds_per_step(n, 2));  // the crossing
  EXPECT_GE(c.seconds_per_step(n, 1), c.seconds_per_step(n, 2));
  EXPECT_GE(c.remaining(2500, 12500, n, {}, 2, {{4166, 1}}),
            0.99 * 10000 * c.seconds_per_step(n, 2));
}

TEST(Progress, McmcProjectionMatchesTraining) {
  Config cfg;
  cfg.model.init_points = 500;
  cfg.model.init_extent = 1.1;
  cfg.train.iterations = 60;
  cfg.train.log_every = 0;
  cfg.densify.refine_start = 10;
  cfg.densify.refine_every = 10;
  cfg.densify.growth = 0.2;
  cfg.densify.cap_max = 1000;
  cfg.backend.type = BackendKind::Cpu;
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  const auto projected = make_densifier(cfg, 1.0)->projected_counts(0, 60, 500);
  // Ticks after steps 20, 30, 40, 50 (refine_start is exclusive): 600, 720, 864, 1000 (cap).
  const std::vector<std::pair<std::int64_t, std::size_t>> expected{
      {20, 600}, {30, 720}, {40, 864}, {50, 1000}};
  EXPECT_EQ(projected, expected);
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  t.train(nullptr);
  EXPECT_EQ(backend->num_splats(), 1000u);
}

TEST(AutoConfig, CapFromPixelsAndDetail) {
  EXPECT_EQ(auto_cap_max(64.0, 0.0, 100000), 320000);    // 100 views of 800 x 800, no detail
  EXPECT_EQ(auto_cap_max(64.0, 5.6, 100000), 980000);    // Lego's detail
  EXPECT_EQ(auto_cap_max(120.0, 3.37, 100000), 600000);  // fox: its pixels and its detail agree
  EXPECT_EQ(auto_cap_max(1.0, 0.0, 1443), 100000);       // a small capture: the floor
  EXPECT_EQ(auto_cap_max(1.0, 0.0, 100000), 200000);     // room to grow from the initial splats
  EXPECT_EQ(auto_cap_max(5000.0, 0.0, 1000), 3000000);   // the ceiling
  EXPECT_EQ(auto_cap_max(100.0, 100.0, 1000), 3000000);
}

TEST(AutoConfig, EdgePixelsAreStrongLuminanceSteps) {
  // 10 x 6 RGB: black left of column 4, a faint ramp of 3 / 255 a column right of it (no edge).
  View v;
  v.image = Image8(10, 6, 3);
  for (int y = 0; y < 6; ++y)
    for (int x = 4; x < 10; ++x)
      for (int c = 0; c < 3; ++c) v.image.data[(y * 10 + x) * 3 + c] = std::uint8_t(100 + 3 * x);
  // Column 3 meets column 4 on each of the rows that have a row below: 5 edge pixels.
  EXPECT_DOUBLE_EQ(edge_megapixels({v}), 5e-6);
  // Straight alpha composites on the background first: a transparent pixel over white is white.
  View rgba;
  rgba.image = Image8(3, 2, 4);
  for (std::size_t i = 0; i < 6; ++i) rgba.image.data[4 * i + 3] = i % 3 == 0 ? 0 : 255;
  EXPECT_DOUBLE_EQ(edge_megapixels({rgba}), 1e-6);  // (0, 0): white beside black; (1, 0) black
  EXPECT_DOUBLE_EQ(edge_megapixels({v, v}), 10e-6);
}

TEST(AutoConfig, StepsPayForTheSplatsBeyondThePixels) {
  EXPECT_EQ(steps_for_splats(17000, 0.64, 320000, 980000), 10100);  // Lego: (0.96 / 1.62)
  EXPECT_EQ(steps_for_splats(30000, 0.52, 200000, 440000), 22500);  // fox at 1/2
  EXPECT_EQ(steps_for_splats(10000, 2.07, 590000, 600000), 10000);  // never below 10,000
  EXPECT_EQ(steps_for_splats(30000, 0.64, 320000, 320000), 30000);  // no extra splats
  Dataset data;
  data.train.resize(10);
  for (View& v : data.train) {
    v.camera.width = v.camera.height = 800;
    v.image = Image8(800, 800, 3);
    for (int y = 0; y < 800; ++y)  // white and black stripes of 4 px
      for (int x = 0; x < 800; ++x)
        if (x % 8 < 4) std::fill_n(&v.image.data[(std::size_t(y) * 800 + x) * 3], 3, 255);
  }
  Config cfg;
  resolve_auto(cfg, data);
  // Edge columns x = 3, 7, ..., 795, on 799 rows: 1.59 MP in the 10 views, so 280k splats where
  // the 6.4 MP give 200k (twice the random init's 100k), and 30,000 x 0.84 / 0.92 steps.
  EXPECT_EQ(cfg.densify.cap_max, 280000);
  EXPECT_EQ(cfg.train.iterations, 27400);
  EXPECT_EQ(cfg.densify.refine_stop, 22833);  // the recipe compressed alike
  Config fixed_cap;
  fixed_cap.densify.cap_max = 400000;
  resolve_auto(fixed_cap, data);
  EXPECT_EQ(fixed_cap.train.iterations, 30000);  // a cap set by hand is not paid for
}

TEST(AutoConfig, DefaultsDensifyAndResolveOnTheData) {
  const Config defaults;
  EXPECT_EQ(defaults.densify.strategy, "mcmc");
  EXPECT_EQ(defaults.train.iterations, 0);
  EXPECT_EQ(defaults.densify.cap_max, 0);
  Config cfg;
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  const auto chosen = resolve_auto(cfg, data);
  ASSERT_EQ(chosen.size(), 4u);
  EXPECT_EQ(chosen[0].key, "train.iterations");
  EXPECT_EQ(cfg.train.iterations, 30000);  // whatever the number of views
  EXPECT_EQ(cfg.densify.cap_max, 200000);  // 24 x 64 x 64 pixels: the floor, then 2 x 100k random
  EXPECT_EQ(chosen[2].key, "train.coarse_factor");
  EXPECT_EQ(cfg.train.coarse_factor, 2);  // 64 px images: 1/2 keeps 32 px, 1/4 would not
  EXPECT_EQ(chosen[3].key, "train.coarse_until");
  EXPECT_EQ(cfg.train.coarse_until, cfg.train.iterations / 2);
  // Explicit values are kept, and nothing is reported.
  Config explicit_cfg;
  explicit_cfg.train.iterations = 123;
  explicit_cfg.densify.cap_max = 456;
  explicit_cfg.train.coarse_factor = 1;
  EXPECT_TRUE(resolve_auto(explicit_cfg, data).empty());
  EXPECT_EQ(explicit_cfg.train.iterations, 123);
  EXPECT_EQ(explicit_cfg.train.coarse_until, 0);  // off: no step to choose
  // An explicit factor without a step gets half of the iterations.
  explicit_cfg.train.coarse_factor = 8;
  const auto until = resolve_auto(explicit_cfg, data);
  ASSERT_EQ(until.size(), 1u);
  EXPECT_EQ(explicit_cfg.train.coarse_until, 61);
}

TEST(AutoConfig, IterationsFromTheTrainingPixels) {
  EXPECT_EQ(auto_iterations(64.0, 100),
            17000);  // Lego's 100 x 800 x 800: 16,875, 170 visits a view
  EXPECT_EQ(auto_iterations(0.64 * 20, 20), 30000);      // 20 such views: the field's count
  EXPECT_EQ(auto_iterations(0.52 * 58, 58), 30000);      // fox at 1/2
  EXPECT_EQ(auto_iterations(1.17 * 58, 58), 15900);      // fox shrunk to 1440 px: 1.08M / 67.9 MP
  EXPECT_EQ(auto_iterations(2.0736 * 58, 58), 10000);    // 1920 x 1080 photos, 58 views: the floor
  EXPECT_EQ(auto_iterations(12.0 * 20, 20), 10000);      // 20 photos of 12 MP
  EXPECT_EQ(auto_iterations(2.0736 * 100, 100), 17000);  // many large views: 170 visits of each
  EXPECT_EQ(auto_iterations(2.0736 * 300, 300), 30000);
  EXPECT_EQ(auto_iterations(0.0, 0), 30000);  // no pixels: nothing to divide by
}

TEST(AutoConfig, LargeImagesCompressTheRecipe) {
  Dataset data;
  data.train.resize(58);
  for (View& v : data.train) v.camera.width = 1440, v.camera.height = 810;  // 67.65 MP in all
  Config cfg;
  const auto chosen = resolve_auto(cfg, data);
  EXPECT_EQ(cfg.train.iterations, 16000);
  // The 30,000-step recipe's steps, times 16,000 / 30,000.
  EXPECT_EQ(cfg.densify.refine_start, 267);
  EXPECT_EQ(cfg.densify.refine_stop, 13333);
  EXPECT_EQ(cfg.train.sh_increase_every, 533);
  EXPECT_EQ(cfg.train.coarse_until, 8000);  // auto: half of the (compressed) iterations
  std::vector<std::string> keys;
  for (const auto& c : chosen) keys.push_back(c.key);
  const std::vector<std::string> expected{
      "train.iterations", "densify.refine_start", "densify.refine_stop", "train.sh_increase_every",
      "densify.cap_max",  "train.coarse_factor",  "train.coarse_until"};
  EXPECT_EQ(keys, expected);
  // Explicit iterations keep the schedule as set.
  Config fixed;
  fixed.train.iterations = 12000;
  resolve_auto(fixed, data);
  EXPECT_EQ(fixed.densify.refine_stop, Config{}.densify.refine_stop);
  EXPECT_EQ(fixed.train.sh_increase_every, Config{}.train.sh_increase_every);
}

TEST(AutoConfig, CoarseFactorFromTheSmallestImage) {
  EXPECT_EQ(auto_coarse_factor(800), 4);  // Lego: 200 px at 1/4
  EXPECT_EQ(auto_coarse_factor(128), 4);  // the demo scene: 32 px at 1/4
  EXPECT_EQ(auto_coarse_factor(127), 2);
  EXPECT_EQ(auto_coarse_factor(64), 2);
  EXPECT_EQ(auto_coarse_factor(63), 1);
}

}  // namespace
}  // namespace splat
