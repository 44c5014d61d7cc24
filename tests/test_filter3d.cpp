// Mip-Splatting's 3D smoothing filter (engine/filter3d.h): the variances from the training
// cameras, the filter in the CPU reference's projection, baking it into plain 3DGS parameters,
// and model.antialiased through training, checkpoints and model.ply.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/error.h"
#include "cpu/pipeline.h"
#include "engine/backend.h"
#include "engine/filter3d.h"
#include "engine/filter3d_host.h"
#include "io/checkpoint.h"
#include "io/demo_scene.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace splat {
namespace {

// A camera at `center` looking down world +z (identity rotation), 100x80, focal 50 x 60.
Camera camera_at(double cz) {
  std::array<double, 16> w2c{};
  w2c[0] = w2c[5] = w2c[10] = w2c[15] = 1;
  w2c[11] = -cz;  // t = -R c
  return Camera::from_w2c(w2c, 100, 80, 50.0, 60.0, 50.0, 40.0);
}

TEST(Filter3d, VarianceIsScaleOverTheHighestSamplingRateSquared) {
  // Splat 0 at z = 4 is seen by both cameras, at depths 4 and 6: the nearer one samples it
  // densest, rate max(fx, fy) / 4 = 15. Splat 1 lies far off to the side of both (outside the
  // 15% margin); splat 2 behind both. Those take the lowest rate of a seen splat: here splat 0's.
  // Splat 3 projects 10% outside the image at depth 2 (inside the margin): rate 30.
  const std::vector<Camera> cams = {camera_at(0.0), camera_at(-2.0)};
  const double x3 = (-0.1 * 100 - 50.0) / 50.0 * 2.0;  // u = fx x / z + cx = -10 px
  const std::vector<float> means = {0, 0, 4, 100, 0, 4, 0, 0, -5, float(x3), 0, 2};
  const std::vector<float> var = filter3d::variances(means, cams);
  ASSERT_EQ(var.size(), 4u);
  const double s = filter3d::config::scale;
  EXPECT_NEAR(var[0], s / (15.0 * 15.0), 1e-9);
  EXPECT_NEAR(var[1], s / (15.0 * 15.0), 1e-9);
  EXPECT_NEAR(var[2], s / (15.0 * 15.0), 1e-9);
  EXPECT_NEAR(var[3], s / (30.0 * 30.0), 1e-9);
  // No camera sees anything: no filter at all.
  const std::vector<float> none = filter3d::variances(std::vector<float>{0, 0, -5}, cams);
  EXPECT_EQ(none, std::vector<float>{0.0f});
}

// Random splats in front of a camera, scales 0.01..0.1, with filter variances comparable to
// their squared scales.
struct FilteredScene {
  Gaussians g;
  Camera cam;
  std::vector<float> var;
};

FilteredScene filtered_scene(int n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  auto u = [&](double lo, double hi) {
    return float(std::uniform_real_distribution<>(lo, hi)(rng));
  };
  FilteredScene s;
  s.cam = camera_at(-3.0);
  s.g.sh_degree = 0;
  s.g.resize(n);
  for (int i = 0; i < n; ++i) {
    s.g.means[i * 3] = u(-1, 1);
    s.g.means[i * 3 + 1] = u(-0.8, 0.8);
    s.g.means[i * 3 + 2] = u(-0.5, 0.5);
    for (int k = 0; k < 3; ++k) s.g.log_scales[i * 3 + k] = std::log(u(0.01, 0.1));
    for (int k = 0; k < 4; ++k) s.g.quats[i * 4 + k] = u(-1, 1);
    s.g.raw_opacity[i] = u(-1, 3);
    for (int c = 0; c < 3; ++c) s.g.sh[i * 3 + c] = u(-1, 1);
    s.var.push_back(u(1e-5, 4e-4));
  }
  return s;
}

TEST(Filter3d, ProjectionWidensTheSplatAndKeepsItsIntegral) {
  // The filter is scale' = sqrt(scale^2 + var) with opacity times prod(scale / scale'): a
  // filtered splat's 2D covariance grows, and opacity * sqrt(det(3D covariance)) is unchanged.
  const FilteredScene s = filtered_scene(50, 3);
  RasterSettings rs;
  rs.sh_degree = 0;
  const cpu::Projected<float> plain = cpu::project_fwd(s.g, s.cam, rs);
  const cpu::Projected<float> filtered = cpu::project_fwd(s.g, s.cam, rs, s.var);
  int compared = 0;
  for (std::size_t i = 0; i < s.g.size(); ++i) {
    if (plain.radii[i * 2] <= 0 || filtered.radii[i * 2] <= 0) continue;
    ++compared;
    double prod = 1;
    for (int k = 0; k < 3; ++k) {
      const double sc = std::exp(double(s.g.log_scales[i * 3 + k]));
      prod *= sc / std::sqrt(sc * sc + s.var[i]);
    }
    EXPECT_NEAR(filtered.opacities[i], plain.opacities[i] * prod, 1e-6) << "splat " << i;
    // The inverse covariance (conic) shrinks: its trace falls.
    EXPECT_LT(filtered.conics[i * 3] + filtered.conics[i * 3 + 2],
              plain.conics[i * 3] + plain.conics[i * 3 + 2])
        << "splat " << i;
  }
  EXPECT_GT(compared, 30);
}

TEST(Filter3d, BakedModelRendersAsTheFilteredOne) {
  // Baking is exact for the 3D filter: the baked parameters without the filter draw the image
  // the raw parameters draw with it (up to float rounding of the baked logits and log-scales).
  const FilteredScene s = filtered_scene(200, 5);
  RasterSettings rs;
  rs.sh_degree = 0;
  const Gaussians baked = filter3d::bake(s.g, s.var);
  const auto with_filter = cpu::render_fwd(s.g, s.cam, rs, s.var).raster.image;
  const auto baked_plain = cpu::render_fwd(baked, s.cam, rs).raster.image;
  const auto raw_plain = cpu::render_fwd(s.g, s.cam, rs).raster.image;
  double max_diff = 0, max_change = 0;
  for (std::size_t k = 0; k < with_filter.size(); ++k) {
    max_diff = std::max(max_diff, double(std::abs(with_filter[k] - baked_plain[k])));
    max_change = std::max(max_change, double(std::abs(with_filter[k] - raw_plain[k])));
  }
  // Float rounding of the baked parameters moves a pixel by ~1e-6; the filter itself by > 0.05
  // (so the comparison would see a bake that did nothing).
  EXPECT_LT(max_diff, 1e-4);
  EXPECT_GT(max_change, 0.05);
  // Nothing to bake: the same model.
  test::expect_bit_identical(filter3d::bake(s.g, {}), s.g);
  EXPECT_THROW(filter3d::bake(s.g, std::vector<float>(3, 0.0f)), Error);
}

Config antialiased_config(std::int64_t iterations) {
  Config cfg;
  cfg.model.init_points = 1500;
  cfg.model.init_extent = 1.1;
  cfg.model.init_opacity = 0.1;
  cfg.model.init_scale = 1.0;
  cfg.model.antialiased = true;
  cfg.train.iterations = iterations;
  cfg.train.log_every = 0;
  cfg.backend.type = BackendKind::Cpu;
  return cfg;
}

TEST(Filter3dSlow, AntialiasedTrainingKeepsTheFilterWithTheModel) {
  // MCMC grows the splats at its refine ticks (every 100 steps from 500 by default: here from 20),
  // and the filter follows: one variance per splat, recomputed after each tick.
  Config cfg = antialiased_config(60);
  cfg.densify.refine_start = 20;
  cfg.densify.refine_every = 20;
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  ASSERT_EQ(backend->state().filter3d.size(), backend->num_splats());
  t.train(nullptr);
  const Checkpoint c = t.checkpoint();
  EXPECT_GT(c.params.size(), 1500u);  // the ticks grew the model
  ASSERT_EQ(c.filter3d.size(), c.params.size());
  std::vector<Camera> cams;
  for (const View& v : data.train) cams.push_back(v.camera);
  // Recomputed at step 60 (a tick), from the final means.
  EXPECT_EQ(c.filter3d, filter3d::variances(c.params.means, cams));
  for (const float v : c.filter3d) EXPECT_GT(v, 0.0f);

  // The baked model drawn as a plain 3DGS model (no filters: what a viewer does) stays close to
  // the model drawn antialiased. What differs is the 2D mip filter, which no bake can reproduce.
  const RasterSettings aa = final_raster_settings(cfg);
  ASSERT_TRUE(aa.antialiased);
  RasterSettings plain = aa;
  plain.antialiased = false;
  auto viewer = make_backend(cfg.backend);
  TrainState baked;
  baked.params = filter3d::bake(c.params, c.filter3d);
  baked.adam_m = baked.adam_v = baked.params;
  viewer->set_state(baked);
  double worst = 1e9;
  for (const View& v : data.test)
    worst = std::min(worst, psnr(viewer->render(v.camera, plain), backend->render(v.camera, aa)));
  // Measured: 48.9 dB on this scene (its splats are large: the 2D mip filter changes little).
  EXPECT_GT(worst, 40.0);
  auto unbaked = make_backend(cfg.backend);
  TrainState raw = baked;
  raw.params = c.params;
  unbaked->set_state(raw);
  double worst_raw = 1e9;
  for (const View& v : data.test)
    worst_raw =
        std::min(worst_raw, psnr(unbaked->render(v.camera, plain), backend->render(v.camera, aa)));
  // The raw parameters, drawn the same way, are further away (measured 47.2 dB): the bake is
  // what brings the 3D filter to a standard viewer.
  EXPECT_GT(worst, worst_raw + 0.8);
  std::printf(
      "baked model, standard render vs antialiased: worst view %.2f dB (unbaked: %.2f dB)\n", worst,
      worst_raw);
}

TEST(Filter3dSlow, CheckpointResumeIsExact) {
  // Ticks at 10, 20 and 30; the checkpoint at 15 holds the filter of the tick at 10.
  Config cfg = antialiased_config(30);
  cfg.densify.refine_start = 5;
  cfg.densify.refine_every = 10;
  cfg.output.checkpoint_every = 15;
  const Checkpoint c =
      test::expect_resume_exact(cfg, load_blender(test::small_demo_scene(), LoadOptions{}), 15);
  EXPECT_EQ(c.filter3d.size(), c.params.size());
}

}  // namespace
}  // namespace splat
