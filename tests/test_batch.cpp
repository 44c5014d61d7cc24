// Batches of views on one process (train.batch_size): the averaged gradient, one loss per step,
// the learning-rate scaling rule and exact resume.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/adam_cpu.h"
#include "engine/backend.h"
#include "io/checkpoint.h"
#include "io/demo_scene.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/init.h"
#include "train/schedule.h"
#include "train/trainer.h"

namespace splat {
namespace {

Config batch_config(std::int64_t iterations, std::int64_t batch) {
  Config cfg;
  cfg.model.init_points = 2000;
  cfg.model.init_extent = 1.1;
  cfg.train.iterations = iterations;
  cfg.train.batch_size = batch;
  cfg.train.log_every = 0;
  cfg.backend.type = BackendKind::Cpu;
  return cfg;
}

// After one Adam step from zero moments, m = (1 - beta1) * gradient: the step's gradient, read
// back.
TEST(Batch, TwoViewStepUsesTheMeanOfTheTwoGradients) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  const Config cfg = batch_config(1, 2);
  TrainState st;
  st.params = initialize_model(cfg.model, data, 7);
  st.adam_m = st.adam_v = st.params;
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group(
        [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });

  StepSettings s;
  s.raster = final_raster_settings(cfg);
  s.raster.sh_degree = 0;
  s.batch_size = 2;  // learning rates stay 0: the parameters do not move, the moments do
  auto backend = make_backend(cfg.backend);
  std::vector<const Image8*> images;
  for (const View& v : data.train) images.push_back(&v.image);
  backend->set_images(images);
  backend->set_state(st);
  const BatchView views[2] = {{&data.train[3].camera, 3}, {&data.train[11].camera, 11}};
  backend->step(views, s);
  std::vector<StepResult> losses;
  backend->collect_losses(losses, true);
  const TrainState after = backend->state();

  const test::ViewGrad a = test::view_grad(st.params, data.train[3], s.raster, s.ssim_lambda);
  const test::ViewGrad b = test::view_grad(st.params, data.train[11], s.raster, s.ssim_lambda);
  ASSERT_EQ(losses.size(), 1u);  // one loss per step: the mean over the batch
  EXPECT_NEAR(losses[0].loss, 0.5 * (a.loss + b.loss), 1e-12);

  std::vector<const std::vector<float>*> ga, gb;
  a.grad.for_each_group([&](const char*, const std::vector<float>& v) { ga.push_back(&v); });
  b.grad.for_each_group([&](const char*, const std::vector<float>& v) { gb.push_back(&v); });
  std::size_t g = 0, differing = 0;
  after.adam_m.for_each_group([&](const char* name, const std::vector<float>& m) {
    const std::vector<float>&x = *ga[g], &y = *gb[g];
    ++g;
    ASSERT_EQ(m.size(), x.size()) << name;
    for (std::size_t i = 0; i < m.size(); ++i) {
      // The backend computes exactly this: (g_a + g_b) * (1 / 2), then Adam's float(0.1 * g).
      const float mean = (x[i] + y[i]) * 0.5f;
      const float expected = float((1 - kAdamBeta1) * double(mean));
      ASSERT_EQ(m[i], expected) << name << "[" << i << "]: views " << x[i] << ", " << y[i];
      differing += x[i] != y[i];
    }
  });
  EXPECT_GT(differing, 1000u)
      << "the two views should have different gradients, or the test proves nothing";
}

TEST(Batch, OneLossPerStepAndBatchViewsAdvanceTheEpoch) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  const Config cfg = batch_config(10, 3);
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  t.train(nullptr);
  EXPECT_EQ(t.loss_history().size(), 10u);
  EXPECT_EQ(backend->state().adam_step, 10);
  // 30 views drawn from epochs of 24: the second epoch is 6 views in.
  EXPECT_EQ(t.checkpoint().view_pos, 6);
}

TEST(BatchSlow, ResumeMatchesUninterruptedRun) {
  // Batches of 5 over 24 views: the checkpoint at step 7 (35 views) sits inside the second epoch
  // and step 5 has a batch that spans the epoch boundary; MCMC ticks grow the model before and
  // after it.
  Config cfg = batch_config(16, 5);
  cfg.densify.strategy = "mcmc";
  cfg.densify.refine_start = 2;
  cfg.densify.refine_every = 4;
  cfg.output.checkpoint_every = 7;
  test::expect_resume_exact(cfg, load_blender(test::small_demo_scene(), LoadOptions{}), 7);
}

TEST(Batch, LearningRateScalingRule) {
  TrainConfig c;
  c.batch_size = 4;
  const LearningRates one = learning_rates(TrainConfig{}, 2.0, 10);
  for (auto [rule, factor] : {std::pair{LrBatchScaling::Sqrt, 2.0},
                              {LrBatchScaling::Linear, 4.0},
                              {LrBatchScaling::None, 1.0}}) {
    c.lr_batch_scaling = rule;
    const LearningRates lr = learning_rates(c, 2.0, 10);
    EXPECT_DOUBLE_EQ(lr.means, factor * one.means) << to_string(rule);
    EXPECT_DOUBLE_EQ(lr.opacity, factor * one.opacity) << to_string(rule);
    EXPECT_DOUBLE_EQ(lr.shN, factor * one.shN) << to_string(rule);
  }
  EXPECT_EQ(TrainConfig{}.lr_batch_scaling, LrBatchScaling::Sqrt);  // the documented default
  EXPECT_EQ(lr_batch_factor(TrainConfig{}), 1.0);                   // batch 1 is unscaled, exactly
}

TEST(Batch, ConfigErrorsNameTheKey) {
  Config cfg;
  test::expect_contains(test::error_of([&] { apply_override(cfg, "train.lr_batch_scaling=cube"); }),
                        {"train.lr_batch_scaling", "none, sqrt, linear"});
  test::expect_contains(test::error_of([&] { apply_override(cfg, "train.batch_size=0"); }),
                        {"train.batch_size = 0"});
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  const Config big = batch_config(1, 25);
  auto backend = make_backend(big.backend);
  test::expect_contains(test::error_of([&] { Trainer t(big, data, *backend); }),
                        {"train.batch_size = 25", "24 training views"});
}

}  // namespace
}  // namespace splat
