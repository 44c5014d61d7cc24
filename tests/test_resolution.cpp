// train.coarse_factor / coarse_until: the factor schedule, the downscaled training images (the
// loss's values box-filtered: composites, masks), the sizes a run gives the backend step by step,
// exact resume from a coarse step, and the config's checks.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>

#include "engine/target.h"
#include "forwarding_backend.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/interrupt.h"
#include "train/resolution.h"
#include "train/time_budget.h"
#include "train/trainer.h"

namespace splat {
namespace {

TEST(Resolution, FactorHalvesAtEvenStepsUpToFullResolution) {
  TrainConfig t;
  t.coarse_factor = 4;
  t.coarse_until = 3000;
  for (const auto& [step, factor] : {std::pair{0, 4}, {1499, 4}, {1500, 2}, {2999, 2}, {3000, 1}})
    EXPECT_EQ(resolution_factor(t, step), factor) << step;
  t.coarse_factor = 8;
  t.coarse_until = 300;
  for (const auto& [step, factor] : {std::pair{99, 8}, {100, 4}, {199, 4}, {200, 2}, {300, 1}})
    EXPECT_EQ(resolution_factor(t, step), factor) << step;
  t.coarse_factor = 1;
  EXPECT_EQ(resolution_factor(t, 0), 1);
}

// The changes listed ahead are exactly the steps where resolution_factor changes.
TEST(Resolution, ChangesAheadMatchTheFactorStepByStep) {
  TrainConfig t;
  for (const auto& [factor, until] :
       {std::pair{4, 3000}, {8, 300}, {16, 1001}, {2, 7}, {4, 1}, {1, 100}}) {
    t.coarse_factor = factor;
    t.coarse_until = until;
    for (const std::int64_t from : {0, 5, 150, 2000}) {
      const std::int64_t total = 3500;
      StepChanges expected;
      for (std::int64_t k = std::max<std::int64_t>(from, 1); k < total; ++k)
        if (resolution_factor(t, k) != resolution_factor(t, k - 1))
          expected.emplace_back(k, std::size_t(resolution_factor(t, k)));
      EXPECT_EQ(resolution_changes(t, from, total), expected)
          << factor << " until " << until << " from " << from;
    }
  }
}

// Straight alpha: the composite the loss reads, box-filtered, rounded to bytes. A mask: the RGB
// box-filtered, a pixel kept where at least half of its block was.
TEST(Resolution, DownscaledImageIsTheBoxFilteredTarget) {
  Image8 rgba(4, 2, 4);
  for (std::size_t i = 0; i < rgba.data.size(); ++i) rgba.data[i] = std::uint8_t(37 * i + 11);
  rgba.background = {0.0f, 0.5f, 1.0f};
  const Image target = target_image(rgba);
  const Image8 half = downscaled_training_image(rgba, 2);
  ASSERT_EQ(half.width, 2);
  ASSERT_EQ(half.height, 1);
  ASSERT_EQ(half.channels, 3);
  for (int x = 0; x < 2; ++x)
    for (int c = 0; c < 3; ++c) {
      float sum = 0;
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) sum += target.data[3 * ((dy * 4) + 2 * x + dx) + c];
      EXPECT_EQ(half.data[3 * x + c], std::lround(sum / 4 * 255)) << x << " " << c;
    }

  Image8 masked = rgba;
  masked.alpha = AlphaUse::mask;
  for (std::size_t i = 0; i < masked.pixels(); ++i)
    masked.data[4 * i + 3] = i == 0 || i == 1 || i == 2 ? 255 : 0;  // block 0: 2 of 4 kept
  const Image8 m = downscaled_training_image(masked, 2);
  ASSERT_TRUE(m.masked());
  EXPECT_EQ(m.data[3], 255);     // half of its block kept
  EXPECT_EQ(m.data[7], 0);       // a quarter
  for (int c = 0; c < 3; ++c) {  // under a mask the RGB bytes are the target
    const int sum = masked.data[c] + masked.data[4 + c] + masked.data[16 + c] + masked.data[20 + c];
    EXPECT_EQ(m.data[c], std::lround(float(sum) / 255.0f / 4 * 255)) << c;
  }
  // No block half kept: any kept part keeps its pixel, so the loss still has one.
  for (std::size_t i = 0; i < masked.pixels(); ++i) masked.data[4 * i + 3] = i == 3 ? 255 : 0;
  const Image8 sparse = downscaled_training_image(masked, 2);
  EXPECT_EQ(sparse.counted_pixels(), 1u);
  EXPECT_EQ(sparse.data[7], 255);
}

// Forwards to the cpu backend; records the size of every step's camera and of the images set.
class SizeLog final : public test::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::vector<int> step_widths, image_widths;
  std::size_t interrupt_after = 0;  // steps, then as if Ctrl-C had come (0: never)

  void set_images(const std::vector<const Image8*>& images) override {
    image_widths.push_back(images.at(0)->width);
    ForwardingBackend::set_images(images);
  }
  void step(std::span<const BatchView> views, const StepSettings& s) override {
    step_widths.push_back(views[0].camera->width);
    ForwardingBackend::step(views, s);
    if (step_widths.size() == interrupt_after) request_interrupt(SIGINT);
  }
};

Config coarse_config() {
  Config cfg;
  cfg.model.init_points = 1000;
  cfg.train.iterations = 12;
  cfg.train.log_every = 0;
  cfg.train.coarse_factor = 4;
  cfg.train.coarse_until = 8;
  cfg.backend.type = BackendKind::Cpu;
  return cfg;
}

// The demo scene is 64 pixels wide: steps 0-3 at 16, 4-7 at 32, then 64; each size's images are
// given once, and the backend ends with the full-size ones.
TEST(Resolution, ARunTrainsAtEachFactorInTurn) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  auto cpu = make_backend(coarse_config().backend);
  SizeLog log(*cpu);
  Trainer t(coarse_config(), data, log);
  t.initialize();
  t.train(nullptr);
  EXPECT_EQ(log.step_widths, (std::vector<int>{16, 16, 16, 16, 32, 32, 32, 32, 64, 64, 64, 64}));
  EXPECT_EQ(log.image_widths, (std::vector<int>{64, 16, 32, 64}));
  for (double loss : t.loss_history()) EXPECT_TRUE(std::isfinite(loss));
}

// A run stopped at a coarse step (an interrupt, a time budget) leaves the backend full-size
// images, not the trainer's, and a resume from a coarse step is exact.
TEST(Resolution, ResumeFromACoarseStepIsExact) {
  Config cfg = coarse_config();
  cfg.train.iterations = 20;
  cfg.train.coarse_until = 12;
  cfg.output.checkpoint_every = 5;
  test::expect_resume_exact(cfg, load_blender(test::small_demo_scene(), LoadOptions{}), 5);

  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  auto cpu = make_backend(cfg.backend);
  SizeLog log(*cpu);
  log.interrupt_after = 3;
  Trainer t(cfg, data, log);
  t.initialize();
  t.train(nullptr);
  request_interrupt(0);
  EXPECT_TRUE(t.interrupted());
  EXPECT_EQ(log.step_widths.size(), 3u);
  EXPECT_EQ(log.image_widths.back(), 64);
}

TEST(Resolution, ConfigChecksNameTheKeys) {
  Config cfg;
  cfg.train.coarse_factor = 3;
  cfg.train.coarse_until = 100;
  test::expect_contains(test::error_of([&] { cfg.validate(); }),
                        {"train.coarse_factor = 3", "power of two"});
  cfg.train.coarse_factor = 32;
  EXPECT_FALSE(test::error_of([&] { cfg.validate(); }).empty());
}

// A coarse_until at or past the last step never reached full resolution (1e9 trained the whole
// run at a quarter of the size): it becomes half of the iterations, with a warning naming both
// keys. A resume told to stop sooner than planned gets the same.
TEST(BadInputResolution, CoarseUntilAtOrPastTheEndIsClampedWithAWarning) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  Config cfg = coarse_config();  // 12 iterations
  cfg.train.coarse_until = 1'000'000'000;
  auto cpu = make_backend(cfg.backend);
  SizeLog log(*cpu);
  ::testing::internal::CaptureStderr();
  Trainer t(cfg, data, log);
  const std::string err = ::testing::internal::GetCapturedStderr();
  test::expect_contains(err, {"warning: ", "train.coarse_until = 1000000000",
                              "train.iterations = 12", "from step 6"});
  EXPECT_EQ(t.config().train.coarse_until, 6);
  t.initialize();
  t.train(nullptr);
  EXPECT_EQ(log.step_widths.back(), 64);
}

// A factor the images cannot be divided by is an error naming the key and the image, before any
// step (not a crash inside the parallel downscale).
TEST(BadInputResolution, FactorLargerThanAnImageNamesTheImage) {
  LoadOptions o;
  o.downscale = 8;  // 8x8 images
  const Dataset data = load_blender(test::small_demo_scene(), o);
  Config cfg = coarse_config();
  cfg.train.coarse_factor = 16;
  auto cpu = make_backend(cfg.backend);
  test::expect_contains(test::error_of([&] { Trainer t(cfg, data, *cpu); }),
                        {"train.coarse_factor = 16", data.train[0].path, "8x8"});
}

TEST(Resolution, ATimeBudgetCompressesTheSchedule) {
  Config recipe;
  recipe.train.iterations = 12000;
  recipe.train.coarse_factor = 4;
  recipe.train.coarse_until = 3000;
  EXPECT_EQ(compressed_recipe(recipe, 0.5).train.coarse_until, 1500);
  EXPECT_EQ(compressed_recipe(recipe, 0.5).train.coarse_factor, 4);
}

}  // namespace
}  // namespace splat
