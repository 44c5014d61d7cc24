// What the training loop does between steps on the CUDA backend's default engine (graph +
// depth2 + fixed point): evaluations during training (train.eval_every) and timed checkpoints
// drain the queue and render, and must not change the run by a bit; a stop request (SIGINT)
// ends it after whole steps with a checkpoint that resumes to the uninterrupted result; the
// strategies and per-image features resume exactly.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <optional>

#include "engine/backend.h"
#include "engine/pose.h"
#include "io/checkpoint.h"
#include "io/demo_scene.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/interrupt.h"
#include "train/trainer.h"

namespace splat::test {
namespace {

const Dataset& loop_scene() {
  static const Dataset data = [] {
    const auto dir = temp_dir("loop_scene") / "scene";
    DemoSceneOptions o;
    o.width = o.height = 96;
    o.train_views = 16;
    o.test_views = 3;
    o.supersample = 1;
    write_demo_scene(dir.string(), o);
    return load_blender(dir.string(), LoadOptions{});
  }();
  return data;
}

Config loop_config() {
  Config cfg;
  cfg.model.init_points = 3000;
  cfg.model.init_extent = 1.1;
  cfg.train.iterations = 120;
  cfg.train.log_every = 10;
  cfg.densify.refine_start = 20;
  cfg.densify.refine_every = 20;
  cfg.densify.cap_max = 6000;
  cfg.backend.type = BackendKind::Cuda;
  return cfg;
}

struct LoopRun {
  Gaussians params;
  std::vector<double> losses;
};

LoopRun train_with(const Config& cfg, const std::string& out) {
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, loop_scene(), *backend);
  t.initialize();
  std::optional<RunDir> dir;
  if (!out.empty()) dir.emplace(out, "test", "train");
  t.train(dir ? &*dir : nullptr);
  return {backend->state().params, t.loss_history()};
}

TEST(TrainLoopGpu, EvaluationsAndCheckpointsDoNotChangeTheRun) {
  const LoopRun plain = train_with(loop_config(), "");
  Config busy = loop_config();
  busy.train.eval_every = 7;
  busy.output.checkpoint_every = 25;
  busy.output.checkpoint_minutes = 1e-9;  // a timed checkpoint after every step
  const auto out = temp_dir("loop_busy");
  const LoopRun with = train_with(busy, out.string());
  expect_bit_identical(with.params, plain.params);
  EXPECT_EQ(with.losses, plain.losses);
  EXPECT_TRUE(std::filesystem::exists(out / "checkpoint_25.ckpt"));
  EXPECT_TRUE(std::filesystem::exists(out / "checkpoint.ckpt"));
}

// As TrainSlow.StatisticsResumeBetweenTicksIsExact on the CPU: the checkpoint at 35 carries the
// statistics that the tick at 40 decides on (ADC) or draws by (MCMC with mcmc_grad_power, gathered
// by the captured step graph), downloaded from and uploaded to the device.
TEST(TrainLoopGpu, StatisticsResumeBetweenTicksIsExact) {
  for (const char* strategy : {"adc", "mcmc"}) {
    SCOPED_TRACE(strategy);
    Config cfg = loop_config();
    cfg.train.iterations = 70;
    cfg.densify.strategy = strategy;
    cfg.densify.refine_start = 10;
    cfg.densify.grow_grad2d = 0.00005;  // adc
    cfg.densify.mcmc_grad_power = 1.0;  // mcmc
    cfg.output.checkpoint_every = 35;
    const Checkpoint c = expect_resume_exact(cfg, loop_scene(), 35);
    ASSERT_EQ(c.adc_count.size(), c.params.size());
  }
}

// train.appearance = affine on the default engine: the checkpoint at 35 carries every image's
// transform and moments, and the resumed run ends with the same bits, transforms included.
TEST(TrainLoopGpu, AppearanceResumeIsExact) {
  Config cfg = loop_config();
  cfg.train.iterations = 70;
  cfg.train.appearance = AppearanceKind::Affine;
  cfg.output.checkpoint_every = 35;
  const Checkpoint c = expect_resume_exact(cfg, loop_scene(), 35);
  ASSERT_EQ(c.appearance.size(), loop_scene().train.size() * kAppearanceFloats);
  EXPECT_NE(c.appearance, AppearanceState::identity(loop_scene().train.size()).params)
      << "35 steps should have moved the transforms";
}

// train.coarse_factor on the default engine: the images change size twice during the run (each
// switch drains, uploads and captures the step graph again), and a resume from a coarse step
// gives the same bits as the run that went through.
TEST(TrainLoopGpu, CoarseToFineResumeIsExact) {
  Config cfg = loop_config();
  cfg.train.iterations = 70;
  cfg.train.coarse_factor = 4;
  cfg.train.coarse_until = 50;
  cfg.output.checkpoint_every = 20;
  expect_resume_exact(cfg, loop_scene(), 20);
}

// densify.strategy = fastgs on the default engine: its ticks render the sampled views between
// queued steps (the score pass), grow, prune and cap opacities, then prune finally after
// refine_stop; a resume between ticks gives the same bits.
TEST(TrainLoopGpu, FastgsResumeIsExact) {
  Config cfg = loop_config();
  cfg.train.iterations = 80;
  cfg.densify.strategy = "fastgs";
  cfg.densify.refine_start = 10;
  cfg.densify.refine_stop = 50;
  cfg.densify.grow_scale3d = 0.001;
  cfg.densify.fastgs_views = 4;
  cfg.densify.fastgs_min_importance = 1;
  cfg.densify.fastgs_final_every = 20;
  cfg.densify.fastgs_final_stop = 80;
  cfg.output.checkpoint_every = 35;
  const Checkpoint c = expect_resume_exact(cfg, loop_scene(), 35);
  EXPECT_NE(c.params.size(), std::size_t(cfg.model.init_points)) << "the ticks changed nothing";
}

// train.pose_opt on the default engine: every image's correction, moments and step count resume
// to the same bits.
TEST(TrainLoopGpu, PoseOptResumeIsExact) {
  Config cfg = loop_config();
  cfg.train.iterations = 70;
  cfg.train.pose_opt = true;
  cfg.train.lr_pose = 1e-3;
  cfg.output.checkpoint_every = 35;
  const Checkpoint c = expect_resume_exact(cfg, loop_scene(), 35);
  ASSERT_EQ(c.pose.size(), loop_scene().train.size() * kPoseFloats);
  EXPECT_NE(c.pose, PoseState::identity(loop_scene().train.size()).params)
      << "35 steps should have moved the corrections";
}

TEST(TrainLoopGpu, InterruptStopsAfterAStepAndResumesExactly) {
  const LoopRun plain = train_with(loop_config(), "");
  const Config cfg = loop_config();
  auto backend = make_backend(cfg.backend);
  Checkpoint saved;
  {
    Trainer t(cfg, loop_scene(), *backend);
    t.initialize();
    request_interrupt(SIGINT);  // before the first step: the loop stops after it
    t.train(nullptr);
    request_interrupt(0);
    ASSERT_TRUE(t.interrupted());
    EXPECT_EQ(t.iteration(), 1);
    saved = t.checkpoint();
  }
  auto resumed_backend = make_backend(cfg.backend);
  Trainer r(cfg, loop_scene(), *resumed_backend);
  r.resume(saved);
  r.train(nullptr);
  EXPECT_FALSE(r.interrupted());
  expect_bit_identical(resumed_backend->state().params, plain.params);
}

}  // namespace
}  // namespace splat::test
