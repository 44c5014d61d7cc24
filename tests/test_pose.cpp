// train.pose_opt on the CPU backend (engine/pose.h): the correction's convention, its gradient
// through the whole render and loss against finite differences, its Adam and pull toward the
// identity, the step that trains it, exact resume, the config's refusals, and (slow tier) the
// held-out PSNR it recovers under perturbed training poses. The checkpoint sections are checked in
// test_checkpoint.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/error.h"
#include "cpu/loss_cpu.h"
#include "cpu/pipeline.h"
#include "engine/backend.h"
#include "engine/pose.h"
#include "forwarding_backend.h"
#include "gradcheck_util.h"
#include "io/checkpoint.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace splat {
namespace {

using gradcheck::Vec;

// ---- The correction -------------------------------------------------------------------------

// c2w' = c2w Delta: a pure translation dt moves the camera centre by c2w's rotation times dt
// (R^T dt), a rotation about the camera's own z axis keeps the centre and turns R by it; zero is
// the identity, bit for bit.
TEST(Pose, CorrectionComposesWithTheCameraToWorldPose) {
  const gradcheck::Scene s = gradcheck::make_scene(5, 1, false);
  const Camera& cam = s.cam;
  const double zero[kPoseFloats] = {};
  const Camera same = posed_camera(cam, zero);
  EXPECT_EQ(same.R.m, cam.R.m);
  EXPECT_EQ(same.t.x, cam.t.x);
  EXPECT_EQ(same.t.y, cam.t.y);
  EXPECT_EQ(same.t.z, cam.t.z);

  const double shift[kPoseFloats] = {0.1, -0.2, 0.3};
  const Vec3<double> c = cam.center(), moved = posed_camera(cam, shift).center();
  const Vec3<double> want = c + transpose(cam.R) * Vec3<double>{0.1, -0.2, 0.3};
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(moved[k], want[k], 1e-12) << k;

  // Rz(a) as a 6D delta: its rows (cos, -sin, 0) and (sin, cos, 0) minus the identity's.
  const double a = 0.3, ca = std::cos(a), sa = std::sin(a);
  const double turn[kPoseFloats] = {0, 0, 0, ca - 1, -sa, 0, sa, ca - 1, 0};
  const Camera turned = posed_camera(cam, turn);
  const Mat3<double> Rz = {{{{ca, -sa, 0}, {sa, ca, 0}, {0, 0, 1}}}};
  const Mat3<double> want_R = transpose(Rz) * cam.R;  // (c2w Rz)^T
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(turned.R[i][j], want_R[i][j], 1e-12) << i << j;
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(turned.center()[k], c[k], 1e-12) << k;
}

// The gradient of the loss w.r.t. the correction, through the corrected camera's render (means,
// covariances and SH view directions all move with it) and the L1 + SSIM loss, against central
// differences. The correction is off the identity (a few hundredths in every entry) so that the
// Gram-Schmidt backward is checked away from its trivial point.
void check_pose_gradient(bool antialiased) {
  gradcheck::Scene s = gradcheck::make_scene(antialiased ? 31 : 29, 16, antialiased);
  std::mt19937 rng(4);
  std::normal_distribution<> normal(0.0, 0.02);
  Vec d(kPoseFloats);
  for (double& x : d) x = normal(rng);
  const Camera base = s.cam;
  s.cam = posed_camera(base, d.data());
  ASSERT_TRUE(gradcheck::is_smooth(s));
  const int W = s.cam.width, H = s.cam.height;
  const auto st = cpu::render_fwd(s.g, s.cam, s.rs);
  std::uniform_real_distribution<> u01(0.0, 1.0), gap(0.05, 0.3);
  Vec target(st.raster.image.size());
  for (std::size_t i = 0; i < target.size(); ++i)
    target[i] = st.raster.image[i] + (u01(rng) < 0.5 ? -1 : 1) * gap(rng);
  const double lambda = gradcheck::kSsimLambda;
  const auto loss = cpu::photometric_loss(st.raster.image, target, W, H, lambda, true);
  const cpu::ProjectedGrad<double> v =
      cpu::rasterize_bwd(st.projected, st.isect, W, H, s.rs, loss.v_image, {});
  GaussiansT<double> grads;
  std::vector<double> v_view;
  cpu::project_bwd(s.g, s.cam, s.rs, st.projected, v, grads, {}, &v_view);
  double R[9], t[3];
  camera_pose(base, R, t);
  Vec analytic(kPoseFloats);
  pose_backward(R, t, d.data(), v_view.data(), analytic.data());

  auto outputs = [&] {
    const auto r = cpu::render_fwd(s.g, posed_camera(base, d.data()), s.rs);
    return Vec{cpu::photometric_loss(r.raster.image, target, W, H, lambda, false).loss};
  };
  const Vec fd = gradcheck::fd_gradient(d, {1.0}, outputs);
  // One scalar (~0.2) differenced over 2e-6, as the end-to-end checks, against entries of
  // 1e-4..1e-1 (each a sum over every splat). Observed: rel L2 <= 2.5e-8, 1 - cos 0 (to double
  // precision), max <= 1.9e-8 (both modes); leaving out the SH direction's terms gives rel L2
  // >= 9e-3, the covariance's >= 1.8e-2.
  gradcheck::expect_grad_close(antialiased ? "pose [antialiased]" : "pose", analytic, fd,
                               {1e-6, 1e-12, 1e-6});
}

TEST(Gradcheck, Pose) {
  check_pose_gradient(false);
}
TEST(Gradcheck, PoseAntialiased) {
  check_pose_gradient(true);
}

// pose_update: the first Adam step moves every entry with a gradient by lr against its sign (the
// bias-corrected m / sqrt(v) is +-1), counts the image's step, and pose_reg is torch's weight
// decay: with no loss gradient, each entry's gradient is reg times itself.
TEST(Pose, AdamAndPullTowardTheIdentity) {
  const double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, t[3] = {0, 0, 4};
  const double none[kPoseViewGrads] = {};
  float d[kPoseFloats] = {0.01f, -0.02f, 0, 0.03f, 0, 0, 0, 0, -0.04f};
  float m[kPoseFloats] = {}, v[kPoseFloats] = {};
  std::int32_t step = 0;
  const float before[kPoseFloats] = {0.01f, -0.02f, 0, 0.03f, 0, 0, 0, 0, -0.04f};
  pose_update(R, t, none, 1e-3, 0.5, d, m, v, &step);
  EXPECT_EQ(step, 1);
  for (std::size_t k = 0; k < kPoseFloats; ++k) {
    const double sign = before[k] > 0 ? 1 : (before[k] < 0 ? -1 : 0);
    EXPECT_NEAR(d[k], before[k] - 1e-3 * sign, 1e-8) << k;  // toward 0, the identity
    EXPECT_NEAR(m[k], 0.1 * 0.5 * before[k], 1e-9) << k;
    EXPECT_NEAR(v[k], 0.001 * 0.25 * before[k] * before[k], 1e-12) << k;
  }
  // Without the pull, the identity with no loss gradient stays where it is.
  float zero[kPoseFloats] = {}, zm[kPoseFloats] = {}, zv[kPoseFloats] = {};
  std::int32_t zstep = 0;
  pose_update(R, t, none, 1e-3, 0.0, zero, zm, zv, &zstep);
  EXPECT_EQ(std::vector<float>(zero, zero + kPoseFloats), std::vector<float>(kPoseFloats, 0.0f));
  EXPECT_EQ(zstep, 1);
  // A loss gradient along t' (the camera moves along its z axis): only dt_z moves, against it.
  double along_z[kPoseViewGrads] = {};
  along_z[11] = 2.0;  // d loss / d t'_z
  std::fill(zm, zm + kPoseFloats, 0.0f);
  std::fill(zv, zv + kPoseFloats, 0.0f);
  zstep = 0;
  pose_update(R, t, along_z, 1e-3, 0.0, zero, zm, zv, &zstep);
  for (std::size_t k = 0; k < kPoseFloats; ++k)  // t' = t - dt: d loss / d dt_z = -2
    EXPECT_NEAR(zero[k], k == 2 ? 1e-3 : 0.0, 1e-9) << k;
}

// ---- Training --------------------------------------------------------------------------------

Config small_config(std::int64_t iterations) {
  Config cfg = test::short_cpu_training(iterations);
  cfg.model.init_points = 2000;
  cfg.model.init_extent = 1.1;
  return cfg;
}

Dataset load_small() {
  return load_blender(test::small_demo_scene(), LoadOptions{});
}

using test::trained_run;

// Identity corrections that never move (lr 0, no pull) train exactly as pose_opt = false: the same
// losses and parameter bits; their moments and counts did move.
TEST(Pose, IdentityWithZeroRateIsOff) {
  const Dataset data = load_small();
  Config off = small_config(8);
  Config on = off;
  on.train.pose_opt = true;
  on.train.lr_pose = 0;
  on.train.pose_reg = 0;
  const test::TrainedRun a = trained_run(off, data), b = trained_run(on, data);
  EXPECT_EQ(a.losses, b.losses);
  test::expect_bit_identical(a.state.params, b.state.params);
  test::expect_bit_identical(a.state.adam_m, b.state.adam_m);
  EXPECT_TRUE(a.state.pose.empty());
  EXPECT_EQ(b.state.pose.params, PoseState::identity(data.train.size()).params);
  EXPECT_TRUE(
      std::any_of(b.state.pose.v.begin(), b.state.pose.v.end(), [](float x) { return x > 0; }));
  std::int32_t steps = 0;
  for (const std::int32_t n : b.state.pose.steps) steps += n;
  EXPECT_EQ(steps, 8);  // one update per step, to the step's image
}

// A step renders from its image's corrected pose and trains that correction alone.
TEST(Pose, TheStepRendersAndTrainsItsImagesCorrection) {
  const Dataset data = load_small();
  Config cfg = small_config(1);
  cfg.train.pose_opt = true;
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  TrainState st = backend->state();
  ASSERT_EQ(st.pose.images(), data.train.size());
  StepSettings s;
  s.lr.pose = 1e-3;
  // The loss of a step on image 3 with its correction moved differs from the identity's.
  const auto loss_of = [&](const TrainState& state) {
    backend->set_state(state);
    backend->step(data.train[3].camera, 3, s);
    std::vector<StepResult> r;
    backend->collect_losses(r, true);
    return r.at(0).loss;
  };
  const double identity_loss = loss_of(st);
  const TrainState after = backend->state();
  TrainState shifted = st;
  shifted.pose.params[3 * kPoseFloats + 0] = 0.2f;
  EXPECT_NE(loss_of(shifted), identity_loss);
  // At the identity, the 6D entries along b1 (3) and along b1, b2 in a2 (6, 7) have no gradient
  // (Gram-Schmidt normalizes them away); every other entry of image 3 moved, no other image's.
  for (std::size_t i = 0; i < data.train.size(); ++i)
    for (std::size_t k = 0; k < kPoseFloats; ++k) {
      const float x = after.pose.params[i * kPoseFloats + k];
      if (i == 3 && k != 3 && k != 6 && k != 7)
        EXPECT_NE(x, 0.0f) << k;
      else
        EXPECT_EQ(x, 0.0f) << i << " " << k;
    }
  EXPECT_EQ(after.pose.steps[3], 1);
  EXPECT_EQ(after.pose.steps[2], 0);
}

// A run with corrections resumes bit for bit: the checkpoint carries them, their moments and
// their step counts.
TEST(Pose, ResumeIsExact) {
  Config cfg = small_config(30);
  cfg.train.pose_opt = true;
  cfg.train.lr_pose = 1e-3;
  cfg.output.checkpoint_every = 13;
  const Checkpoint c = test::expect_resume_exact(cfg, load_small(), 13);
  EXPECT_EQ(c.pose.size(), 24 * kPoseFloats);
  EXPECT_EQ(c.pose_steps.size(), 24u);
  EXPECT_NE(c.pose, PoseState::identity(24).params);  // they trained
}

// ADC's refine ticks rebuild the state (compaction): the corrections, per image, come through.
TEST(Pose, RefineTicksKeepTheCorrections) {
  const Dataset data = load_small();
  Config cfg = small_config(30);
  cfg.train.pose_opt = true;
  cfg.train.lr_pose = 1e-3;
  cfg.densify.strategy = "adc";
  cfg.densify.refine_start = 10;
  cfg.densify.refine_every = 10;
  const test::TrainedRun r = trained_run(cfg, data);
  ASSERT_EQ(r.state.pose.images(), data.train.size());
  std::int32_t updates = 0;
  for (const std::int32_t k : r.state.pose.steps) updates += k;
  EXPECT_EQ(updates, 30);
  EXPECT_NE(r.state.pose.params, PoseState::identity(data.train.size()).params);
}

// pose_opt from a checkpoint without corrections starts them at the identity; a checkpoint with
// corrections and pose_opt off is an error naming the key.
TEST(Pose, ResumeAcrossTheSetting) {
  Config cfg = small_config(4);
  Config on = cfg;
  on.train.pose_opt = true;
  on.train.iterations = 6;
  const test::AcrossSetting r = test::resume_across_setting(cfg, on, load_small());
  ASSERT_TRUE(r.without.pose.empty());
  EXPECT_EQ(r.resumed.pose.params, PoseState::identity(24).params);
  EXPECT_EQ(r.resumed.pose.steps, std::vector<std::int32_t>(24, 0));
  ASSERT_EQ(r.with.pose.size(), 24 * kPoseFloats);
  test::expect_contains(r.error, {"pose corrections", "train.pose_opt"});
}

// ---- Configuration ---------------------------------------------------------------------------

TEST(PoseConfig, KeysAndDefaults) {
  EXPECT_FALSE(Config{}.train.pose_opt);
  EXPECT_EQ(Config{}.train.lr_pose, 1e-5);
  EXPECT_EQ(Config{}.train.pose_reg, 1e-6);
  Config c;
  apply_override(c, "train.pose_opt=true");
  EXPECT_TRUE(c.train.pose_opt);
  apply_config_text(c, "[train]\nlr_pose = 0.002\npose_reg = 0\n", "t");
  EXPECT_EQ(c.train.lr_pose, 0.002);
  EXPECT_EQ(c.train.pose_reg, 0.0);
  test::expect_contains(test::error_of([&] { apply_override(c, "train.lr_pose=-1"); }),
                        {"train.lr_pose"});
  test::expect_contains(test::error_of([&] { apply_override(c, "train.pose_reg=-1"); }),
                        {"train.pose_reg"});
  test::expect_contains(test::error_of([&] { apply_override(c, "train.pose_opt=\"yes\""); }),
                        {"train.pose_opt"});
}

TEST(PoseConfig, UnsupportedCombinationsAreRefusedNamingTheKeys) {
  Config cfg;
  cfg.train.pose_opt = true;
  cfg.backend.type = BackendKind::Cuda;
  EXPECT_NO_THROW(cfg.validate());
  cfg.train.batch_size = 2;
  test::expect_contains(test::error_of([&] { cfg.validate(); }),
                        {"train.pose_opt = true", "train.batch_size = 2"});
  cfg.train.batch_size = 1;
  cfg.densify.strategy = "fastgs";
  test::expect_contains(test::error_of([&] { cfg.validate(); }),
                        {"train.pose_opt = true", "densify.strategy = \"fastgs\""});
}

// ---- Recovering perturbed poses --------------------------------------------------------------

// A rigid error of each training pose, c2w' = c2w E: a rotation of about `degrees` about a random
// axis and a translation of about `shift` scene units in a random direction (of the camera's own
// axes): what pose_opt should learn to undo.
void perturb_poses(Dataset& data, double degrees, double shift, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<> normal(0.0, 1.0);
  for (View& v : data.train) {
    const Vec3<double> axis = normalize(Vec3<double>{normal(rng), normal(rng), normal(rng)});
    const Vec3<double> dir = normalize(Vec3<double>{normal(rng), normal(rng), normal(rng)});
    const double a = degrees * 3.14159265358979 / 180.0, c = std::cos(a), s = std::sin(a);
    // Rodrigues: E = c I + s [axis]x + (1 - c) axis axis^T, as a 6D delta of its first two rows.
    Mat3<double> E;
    const Mat3<double> K = {{{{0, -axis.z, axis.y}, {axis.z, 0, -axis.x}, {-axis.y, axis.x, 0}}}};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        E[i][j] = (i == j ? c : 0.0) + s * K[i][j] + (1 - c) * axis[i] * axis[j];
    const double e[kPoseFloats] = {shift * dir.x, shift * dir.y, shift * dir.z,
                                   E[0][0] - 1,   E[0][1],       E[0][2],
                                   E[1][0],       E[1][1] - 1,   E[1][2]};
    v.camera = posed_camera(v.camera, e);
  }
}

// Training poses off by 1 degree and 0.05 scene units (a few pixels at 64x64 from 4 units away),
// held-out views exact: pose_opt learns corrections that undo part of each error (c2w E Delta
// nearer the exact pose) and the held-out PSNR rises clearly. A rate far above the default suits
// a run this short (each image gets about 80 updates). Measured (2000 steps, seed 5): perturbed
// 20.83 dB, pose_opt 23.00 dB, summed pose error 1.34 -> 1.02; the exact poses reach 32.5 dB,
// and pose_opt on them 30.3 dB (the corrections drift where nothing pins them).
TEST(PoseSlow, RefinementRecoversHeldOutPsnrUnderPerturbedPoses) {
  const Dataset exact = load_small();
  Dataset data = exact;
  perturb_poses(data, 1.0, 0.05, 5);
  Config cfg = small_config(2000);
  cfg.train.coarse_factor = 1;
  cfg.train.lr_pose = 3e-4;
  const RasterSettings rs = final_raster_settings(cfg);
  double psnr[2];
  PoseState learnt;
  for (const bool on : {false, true}) {
    cfg.train.pose_opt = on;
    auto backend = make_backend(cfg.backend);
    Trainer t(cfg, data, *backend);
    t.initialize();
    t.train(nullptr);
    psnr[on] = evaluate(*backend, data.test, rs, "").mean_psnr;
    if (on) learnt = backend->state().pose;
  }
  // How much of the error the corrections undo: the distance of each perturbed camera (centre and
  // rotation matrix) from its exact pose, before and after its learnt correction, summed.
  double before = 0, after = 0;
  for (std::size_t i = 0; i < data.train.size(); ++i) {
    const Camera& c = data.train[i].camera;
    const Camera fixed = posed_camera(c, &learnt.params[i * kPoseFloats]);
    const Camera& original = exact.train[i].camera;
    const auto distance = [&](const Camera& a) {
      double d2 = 0;
      for (int k = 0; k < 3; ++k)
        d2 += (a.center()[k] - original.center()[k]) * (a.center()[k] - original.center()[k]);
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k)
          d2 += (a.R[r][k] - original.R[r][k]) * (a.R[r][k] - original.R[r][k]);
      return std::sqrt(d2);
    };
    before += distance(c);
    after += distance(fixed);
  }
  std::printf("held-out PSNR: perturbed poses %.2f dB, pose_opt %.2f dB; pose error %.4f -> %.4f\n",
              psnr[0], psnr[1], before, after);
  EXPECT_GT(psnr[1], psnr[0] + 1.0) << "off " << psnr[0] << ", pose_opt " << psnr[1];
  EXPECT_LT(after, 0.9 * before);
}

}  // namespace
}  // namespace splat
