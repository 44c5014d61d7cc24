// AbsGS's "homodirectional" screen-space statistic (StepPlan::accumulate_grad2d_abs) on the CPU
// reference: the rasterizer's per-pixel absolute mean gradients against finite differences of
// each pixel, the statistic where signed gradients cancel, its life beside ADC's grad2d (off by
// default, reset and all-reduced with it), and a resume through a checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/adc_cpu.h"
#include "cpu/loss_cpu.h"
#include "cpu/pipeline.h"
#include "cpu/testing.h"
#include "distributed/communicator.h"
#include "engine/adc.h"
#include "engine/target.h"
#include "forwarding_backend.h"
#include "io/checkpoint.h"
#include "io/dataset.h"
#include "io/run_dir.h"
#include "strategy/adc/adc_strategy.h"
#include "strategy/mcmc/mcmc_strategy.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/trainer.h"

namespace splat {
namespace {

bool all_zero(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; });
}

std::unique_ptr<Backend> cpu_backend() {
  BackendConfig cfg;
  cfg.type = BackendKind::Cpu;
  return make_backend(cfg);
}

// ---- The rasterizer's sums ----------------------------------------------------------------------

// Six splats on a 30x20 image (two tile columns, two rows), every one blended at every pixel
// (smooth_cutoff), so that finite differences of each pixel are smooth.
TEST(AbsGrad, MatchesPerPixelSum) {
  constexpr int W = 30, H = 20, N = 6;
  std::mt19937 rng(5);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<>(lo, hi)(rng);
  };
  cpu::Projected<double> p;
  for (int i = 0; i < N; ++i) {
    p.means2d.insert(p.means2d.end(), {uniform(4, W - 4), uniform(4, H - 4)});
    p.depths.push_back(uniform(1, 5));
    // sigma 2..5 px, correlated
    const double sx = uniform(2, 5), sy = uniform(2, 5), r = uniform(-0.6, 0.6);
    const double cxx = sx * sx, cyy = sy * sy, cxy = r * sx * sy, det = cxx * cyy - cxy * cxy;
    p.conics.insert(p.conics.end(), {cyy / det, -cxy / det, cxx / det});
    p.radii.insert(p.radii.end(), {40, 40});
    for (int c = 0; c < 3; ++c) p.colors.push_back(uniform(0.1, 0.9));
    p.opacities.push_back(uniform(0.2, 0.8));
  }
  RasterSettings rs;
  rs.smooth_cutoff = true;
  rs.background = {0.2f, 0.3f, 0.4f};
  const cpu::Intersections isect =
      cpu::intersect_tiles(p.means2d, p.radii, p.depths, {}, {}, cpu::TileGrid::for_image(W, H));
  std::vector<double> v_image(std::size_t(W) * H * 3), v_alpha(std::size_t(W) * H);
  for (double& x : v_image) x = uniform(-1, 1);
  for (double& x : v_alpha) x = uniform(-1, 1);

  const cpu::ProjectedGrad<double> v =
      cpu::rasterize_bwd(p, isect, W, H, rs, v_image, v_alpha, true);
  const cpu::ProjectedGrad<double> plain = cpu::rasterize_bwd(p, isect, W, H, rs, v_image, v_alpha);
  EXPECT_TRUE(plain.means2d_abs.empty()) << "only when asked for";
  // The other gradients are those of the plain backward, bit for bit.
  EXPECT_EQ(v.means2d, plain.means2d);
  EXPECT_EQ(v.conics, plain.conics);
  EXPECT_EQ(v.colors, plain.colors);
  EXPECT_EQ(v.opacities, plain.opacities);
  ASSERT_EQ(v.means2d_abs.size(), std::size_t(2 * N));

  // Per pixel: d (v_image . image_p + v_alpha alpha_p) / d mean2d by central differences.
  constexpr double h = 1e-5;
  int cancelling = 0;
  for (std::size_t k = 0; k < 2 * N; ++k) {
    cpu::Projected<double> q = p;
    q.means2d[k] = p.means2d[k] + h;
    const cpu::RasterOut<double> up = cpu::rasterize_fwd(q, isect, W, H, rs);
    q.means2d[k] = p.means2d[k] - h;
    const cpu::RasterOut<double> down = cpu::rasterize_fwd(q, isect, W, H, rs);
    double sum = 0, abs_sum = 0;
    for (std::size_t px = 0; px < std::size_t(W) * H; ++px) {
      double d = v_alpha[px] * (up.alpha[px] - down.alpha[px]);
      for (int c = 0; c < 3; ++c)
        d += v_image[px * 3 + c] * (up.image[px * 3 + c] - down.image[px * 3 + c]);
      d /= 2 * h;
      sum += d;
      abs_sum += std::abs(d);
    }
    SCOPED_TRACE("splat " + std::to_string(k / 2) + " axis " + std::to_string(k % 2));
    // Observed: differences below 1e-10 of the absolute sum (finite-difference noise).
    EXPECT_NEAR(v.means2d[k], sum, 1e-7 * abs_sum);
    EXPECT_NEAR(v.means2d_abs[k], abs_sum, 1e-7 * abs_sum);
    cancelling += abs_sum > 1.05 * std::abs(sum);
  }
  EXPECT_GE(cancelling, N) << "random pixel gradients should cancel in most signed sums";
}

// One round splat at the centre of a square view, a uniform target and an L1 loss: the pixels on
// either side of its mean pull it equally in opposite directions, so grad2d is (nearly) zero while
// the absolute statistic is not.
TEST(AbsGrad, DiffersFromGrad2dWhereGradientsCancel) {
  TrainState st;
  for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) {
    g->sh_degree = 0;
    g->resize(1);
    g->for_each_group(
        [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  }
  st.params.quats = {1, 0, 0, 0};
  st.params.log_scales = {std::log(0.3f), std::log(0.3f), std::log(0.3f)};
  st.params.sh = {1.0f, 0.5f, -0.5f};
  // Camera 3 units behind the splat, looking at it: its mean projects to (16, 16), between pixels.
  const std::array<double, 16> w2c = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 0, 0, 0, 1};
  const Camera cam = Camera::from_w2c(w2c, 32, 32, 32, 32, 16, 16);
  Image8 target(32, 32, 3);
  std::fill(target.data.begin(), target.data.end(), std::uint8_t(20));
  StepSettings s;
  s.loss = LossKind::L1;
  s.raster.sh_degree = 0;
  s.raster.background = {0, 0, 0};
  s.accumulate_grad2d = s.accumulate_grad2d_abs = true;

  auto b = cpu_backend();
  b->set_images({&target});
  b->set_state(st);
  b->step(cam, 0, s);
  const adc::Stats& got = cpu::adc_stats(*b);
  ASSERT_EQ(got.count, std::vector<std::int32_t>{1});
  ASSERT_EQ(got.grad2d_abs.size(), 1u);
  EXPECT_GT(got.grad2d_abs[0], 1e-3f);
  // Float sums of mirrored terms in another order: the rounding is left of the signed statistic.
  EXPECT_LT(got.grad2d[0], 1e-4f * got.grad2d_abs[0]);
}

// ---- In the backend -----------------------------------------------------------------------------

struct StepScene {
  TrainState st;
  Camera cam;
  Image8 target{40, 30, 3};
  StepSettings s;
};

// 300 splats, some off screen, in front of a 40x30 camera; a striped target.
StepScene step_scene() {
  StepScene u;
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (Gaussians* g : {&u.st.params, &u.st.adam_m, &u.st.adam_v}) {
    g->sh_degree = 1;
    g->resize(300);
    g->for_each_group(
        [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  }
  Gaussians& p = u.st.params;
  for (std::size_t i = 0; i < 300; ++i) {
    for (int k = 0; k < 3; ++k) {
      p.means[i * 3 + k] = (k < 2 ? 2.5f : 0.8f) * uni(rng);
      p.log_scales[i * 3 + k] = std::log(0.05f + 0.03f * uni(rng));
    }
    for (int k = 0; k < 4; ++k) p.quats[i * 4 + k] = uni(rng);
    p.raw_opacity[i] = uni(rng);
  }
  for (float& x : p.sh) x = 0.3f * uni(rng);
  const std::array<double, 16> w2c = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 0, 0, 0, 1};
  u.cam = Camera::from_w2c(w2c, 40, 30, 40, 40, 20, 15);
  for (std::size_t i = 0; i < u.target.data.size(); ++i)
    u.target.data[i] = std::uint8_t(i % 7 * 36);
  u.s.raster.sh_degree = 1;
  u.s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};
  return u;
}

// Off by default and without accumulate_grad2d; when on, the statistic of the backward's stages
// and nothing else changes; a tick resets it with grad2d.
TEST(AbsGrad, OffByDefaultAndResetWithGrad2d) {
  StepScene u = step_scene();
  EXPECT_FALSE(u.s.accumulate_grad2d_abs);
  auto b = cpu_backend();
  b->set_images({&u.target});
  b->set_state(u.st);
  u.s.accumulate_grad2d = true;
  b->step(u.cam, 0, u.s);
  EXPECT_TRUE(cpu::adc_stats(*b).grad2d_abs.empty());
  EXPECT_TRUE(b->state().adc.grad2d_abs.empty());
  const adc::Stats one = cpu::adc_stats(*b);
  u.s.accumulate_grad2d = false;
  u.s.accumulate_grad2d_abs = true;
  b->step(u.cam, 0, u.s);  // ignored without accumulate_grad2d
  EXPECT_EQ(cpu::adc_stats(*b).grad2d, one.grad2d);
  EXPECT_EQ(cpu::adc_stats(*b).count, one.count);
  EXPECT_TRUE(cpu::adc_stats(*b).grad2d_abs.empty());

  // The next step by hand, from the state the backend holds now.
  const TrainState now = b->state();
  const auto fwd = cpu::render_fwd(now.params, u.cam, u.s.raster);
  const auto loss = cpu::photometric_loss(fwd.raster.image, target_image(u.target).data, 40, 30,
                                          float(u.s.ssim_lambda), true);
  const auto v =
      cpu::rasterize_bwd(fwd.projected, fwd.isect, 40, 30, u.s.raster, loss.v_image, {}, true);
  adc::Stats want = now.adc;
  cpu::adc_accumulate(want, fwd.projected.radii, v.means2d, 40, 30, v.means2d_abs);
  // A twin takes the same step without the statistic.
  auto twin = cpu_backend();
  twin->set_images({&u.target});
  twin->set_state(now);
  u.s.accumulate_grad2d = true;
  u.s.accumulate_grad2d_abs = false;
  twin->step(u.cam, 0, u.s);

  u.s.accumulate_grad2d_abs = true;
  b->step(u.cam, 0, u.s);
  const adc::Stats& got = cpu::adc_stats(*b);
  EXPECT_EQ(got.grad2d_abs, want.grad2d_abs);
  EXPECT_EQ(got.grad2d, want.grad2d);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(b->state().adc.grad2d_abs, got.grad2d_abs);
  const adc::Stats& twin_stats = cpu::adc_stats(*twin);
  EXPECT_EQ(twin_stats.grad2d, got.grad2d);
  EXPECT_TRUE(twin_stats.grad2d_abs.empty());
  test::expect_bit_identical(b->state().params, twin->state().params);
  // One step's statistic is never below its grad2d (the triangle inequality), and above it for
  // most visible splats.
  adc::Stats step;
  step.reset(300);
  cpu::adc_accumulate(step, fwd.projected.radii, v.means2d, 40, 30, v.means2d_abs);
  std::size_t visible = 0, above = 0;
  for (std::size_t i = 0; i < step.size(); ++i) {
    EXPECT_GE(step.grad2d_abs[i], step.grad2d[i] * (1 - 1e-6f)) << i;
    visible += step.count[i] > 0;
    above += step.grad2d_abs[i] > 1.01f * step.grad2d[i];
  }
  EXPECT_GT(visible, 50u);
  EXPECT_GT(above, visible / 2);

  b->refine(AdcTick(AdcRefineSettings{}));
  const adc::Stats& reset = cpu::adc_stats(*b);
  EXPECT_EQ(reset.grad2d_abs.size(), b->num_splats()) << "still in use after the tick";
  EXPECT_TRUE(all_zero(reset.grad2d_abs));
  EXPECT_TRUE(all_zero(reset.grad2d));
  b->refine(McmcTick(McmcRefineSettings{0.0f, b->num_splats(), 1}));
  EXPECT_EQ(cpu::adc_stats(*b).grad2d_abs.size(), b->num_splats());
  EXPECT_TRUE(all_zero(cpu::adc_stats(*b).grad2d_abs));

  TrainState bad = b->state();
  bad.adc.grad2d_abs.pop_back();
  test::expect_contains(test::error_of([&] { b->set_state(bad); }),
                        {"cpu backend", "absolute gradient sums"});
}

// Rank 0 of two, alone: every all-reduce is recorded and leaves the data as it is.
class RecordingRanks final : public dist::Communicator {
 public:
  std::string name() const override { return "recording"; }
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void allreduce_sum(std::span<float> data, const char* what) override {
    floats.push_back({what, std::vector<float>(data.begin(), data.end())});
  }
  void allreduce_sum(std::span<double>, const char*) override {}
  void allreduce_sum(std::span<std::int32_t>, const char*) override {}
  void broadcast(std::span<std::byte>, int, const char*) override {}
  std::vector<std::uint64_t> allgather(std::uint64_t v, const char*) override { return {v, v}; }
  void set_timeout(double) override {}
  [[noreturn]] void abort(const std::string& m) override { throw Error(m); }

  std::vector<std::pair<std::string, std::vector<float>>> floats;
  const std::vector<float>* find(const std::string& what) const {
    for (const auto& [w, data] : floats)
      if (w == what) return &data;
    return nullptr;
  }
};

// The tick sums the statistic over the ranks, as grad2d; a run without it all-reduces as before.
TEST(AbsGrad, AllReducedWithGrad2dAcrossRanks) {
  const std::string kAbs = "ADC statistics all-reduce (grad2d_abs)";
  for (const bool abs : {false, true}) {
    StepScene u = step_scene();
    u.s.batch_size = 2;
    u.s.accumulate_grad2d = true;
    u.s.accumulate_grad2d_abs = abs;
    RecordingRanks ranks;
    auto b = cpu_backend();
    b->set_communicator(ranks);
    b->set_images({&u.target});
    b->set_state(u.st);
    b->step(u.cam, 0, u.s);
    const adc::Stats before = cpu::adc_stats(*b);
    b->refine(AdcTick(AdcRefineSettings{}));
    ASSERT_NE(ranks.find("ADC statistics all-reduce (grad2d)"), nullptr);
    if (!abs) {
      EXPECT_EQ(ranks.find(kAbs), nullptr);
      continue;
    }
    ASSERT_NE(ranks.find(kAbs), nullptr);
    EXPECT_EQ(*ranks.find(kAbs), before.grad2d_abs);
    EXPECT_FALSE(all_zero(before.grad2d_abs));
  }
}

// ---- Resume -------------------------------------------------------------------------------------

// ADC's steps with the statistic on (no strategy asks for it yet).
class AbsOn final : public test::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void step(std::span<const BatchView> views, const StepSettings& s) override {
    StepSettings t = s;
    t.accumulate_grad2d_abs = s.accumulate_grad2d;
    ForwardingBackend::step(views, t);
  }
};

// The checkpoint between ticks carries the sums, so the resumed run ends with those of the
// uninterrupted one; fresh sums after the resume would hold only the last 4 steps.
TEST(AbsGrad, ResumeBetweenTicksIsExact) {
  LoadOptions o;
  const Dataset data = load_blender(test::small_demo_scene(), o);
  Config cfg = test::short_cpu_training(10);
  cfg.model.init_points = 2000;
  cfg.densify.strategy = "adc";
  cfg.densify.refine_start = 1000;  // no tick within the run
  cfg.output.checkpoint_every = 6;
  const auto dir = test::temp_dir("absgrad_resume");

  auto cpu1 = make_backend(cfg.backend);
  AbsOn b1(*cpu1);
  Trainer full(cfg, data, b1);
  full.initialize();
  RunDir out(dir.string(), "test", "train");
  full.train(&out);
  const Checkpoint saved = read_checkpoint((dir / "checkpoint_6.ckpt").string());
  ASSERT_EQ(saved.adc_grad2d_abs.size(), saved.params.size());
  EXPECT_FALSE(all_zero(saved.adc_grad2d_abs));

  auto cpu2 = make_backend(cfg.backend);
  AbsOn b2(*cpu2);
  Trainer resumed(cfg, data, b2);
  resumed.resume(saved);
  resumed.train(nullptr);
  const adc::Stats a = cpu::adc_stats(*cpu1), r = cpu::adc_stats(*cpu2);
  ASSERT_EQ(a.grad2d_abs.size(), a.size());
  EXPECT_EQ(r.grad2d_abs, a.grad2d_abs);
  EXPECT_EQ(r.grad2d, a.grad2d);
}

}  // namespace
}  // namespace splat
