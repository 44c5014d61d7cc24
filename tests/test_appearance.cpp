// train.appearance = affine on the CPU backend: the identity transforms change nothing, training
// recovers what per-image exposure changes hide from held-out views, and resume is exact. The
// gradients are checked in test_gradcheck.cpp, the checkpoint section in test_checkpoint.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/error.h"
#include "engine/backend.h"
#include "engine/target.h"
#include "io/checkpoint.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace splat {
namespace {

Config small_config(std::int64_t iterations) {
  Config cfg;
  cfg.model.init_points = 2000;
  cfg.model.init_extent = 1.1;
  cfg.model.init_opacity = 0.1;  // 3DGS's start, as test_train.cpp's short runs
  cfg.model.init_scale = 1.0;
  cfg.train.iterations = iterations;
  cfg.train.log_every = 0;
  cfg.backend.type = BackendKind::Cpu;
  return cfg;
}

Dataset load_small(std::array<float, 3> background = {1.0f, 1.0f, 1.0f}) {
  LoadOptions o;
  o.background = background;
  return load_blender(test::small_demo_scene(), o);
}

using test::trained_run;

// Identity transforms that never move (lr 0, no pull) train exactly as appearance = none: the
// same losses and parameter bits, with batches of one and of several views.
TEST(Appearance, IdentityWithZeroRateIsNone) {
  const Dataset data = load_small();
  for (const std::int64_t batch : {1, 3}) {
    Config none = small_config(8);
    none.train.batch_size = batch;
    Config affine = none;
    affine.train.appearance = AppearanceKind::Affine;
    affine.train.lr_appearance = 0;
    const test::TrainedRun a = trained_run(none, data), b = trained_run(affine, data);
    SCOPED_TRACE("batch " + std::to_string(batch));
    EXPECT_EQ(a.losses, b.losses);
    test::expect_bit_identical(a.state.params, b.state.params);
    test::expect_bit_identical(a.state.adam_m, b.state.adam_m);
    test::expect_bit_identical(a.state.adam_v, b.state.adam_v);
    EXPECT_TRUE(a.state.appearance.empty());
    EXPECT_EQ(b.state.appearance.params,
              AppearanceState::identity(data.train.size()).params);  // never moved
    // The moments did move: the transforms had gradients.
    EXPECT_TRUE(std::any_of(b.state.appearance.v.begin(), b.state.appearance.v.end(),
                            [](float v) { return v > 0; }));
  }
}

// A step with a transform off the identity renders through it: a gain of 0 and an offset equal to
// the target's mean colour makes the loss independent of the splats, so their gradients vanish.
TEST(Appearance, TheStepAppliesTheImageTransform) {
  const Dataset data = load_small();
  Config cfg = small_config(1);
  cfg.train.appearance = AppearanceKind::Affine;
  cfg.train.loss = LossKind::L2;
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  TrainState st = backend->state();
  ASSERT_EQ(st.appearance.images(), data.train.size());
  // Image 0 maps every render to grey 0.5; a step on it moves only its b (and no splat).
  for (std::size_t k = 0; k < kAppearanceFloats; ++k)
    st.appearance.params[k] = k % 4 == 3 ? 0.5f : 0.0f;
  backend->set_state(st);
  StepSettings s;
  s.loss = LossKind::L2;
  s.lr.appearance = 1e-3;
  s.lr.sh0 = 1e-3;
  backend->step(data.train[0].camera, 0, s);
  const TrainState after = backend->state();
  test::expect_bit_identical(after.params, st.params);  // A = 0: no gradient reaches the render
  for (std::size_t k = 0; k < kAppearanceFloats; ++k)
    if (k % 4 == 3)
      EXPECT_NE(after.appearance.params[k], st.appearance.params[k]) << k;
    else  // A moves too: dL/dA = g' r^T is not zero
      EXPECT_NE(after.appearance.params[k], 0.0f) << k;
  // Images 1 and 2 were not in the step: both moved only by the recentering, the same offset.
  for (std::size_t k = 0; k < kAppearanceFloats; ++k) {
    const std::size_t one = kAppearanceFloats + k, two = 2 * kAppearanceFloats + k;
    EXPECT_NEAR(after.appearance.params[one] - st.appearance.params[one],
                after.appearance.params[two] - st.appearance.params[two], 1e-7)
        << k;
  }
}

// The recentering: every transform moves by one offset per entry, after which their mean is the
// identity, and the differences between images are kept.
TEST(Appearance, RecenteringHoldsTheMeanAtTheIdentity) {
  std::vector<float> params = AppearanceState::identity(3).params;
  for (std::size_t k = 0; k < kAppearanceFloats; ++k) {
    params[k] += 0.3f;                                 // image 0: brighter, and off in A
    params[kAppearanceFloats + k] -= 0.1f * float(k);  // image 1: another direction
  }
  const std::vector<float> before = params;
  appearance_recenter(params.data(), 3);
  for (std::size_t k = 0; k < kAppearanceFloats; ++k) {
    const double mean =
        (double(params[k]) + params[kAppearanceFloats + k] + params[2 * kAppearanceFloats + k]) / 3;
    EXPECT_NEAR(mean, appearance_identity(k), 1e-6) << k;
    const float shift = params[k] - before[k];
    for (std::size_t i = 1; i < 3; ++i)
      EXPECT_NEAR(params[i * kAppearanceFloats + k] - before[i * kAppearanceFloats + k], shift,
                  1e-7);
  }
  // Transforms whose mean is the identity stay as they are.
  std::vector<float> identity = AppearanceState::identity(5).params;
  appearance_recenter(identity.data(), 5);
  EXPECT_EQ(identity, AppearanceState::identity(5).params);
}

// Each training image multiplied by its own per-channel gain in [0.7, 1.3] plus an offset in
// [-0.05, 0.05] (a camera's exposure and white balance), the test images left as they are.
Dataset with_exposure_changes(Dataset data) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> gain(0.7f, 1.3f), offset(-0.05f, 0.05f);
  for (View& v : data.train) {
    const Image clean = target_image(v.image);
    float g[3], o[3];
    for (int c = 0; c < 3; ++c) g[c] = gain(rng), o[c] = offset(rng);
    Image8 changed(clean.width, clean.height, 3);
    for (std::size_t i = 0; i < clean.data.size(); ++i) {
      const float x = g[i % 3] * clean.data[i] + o[i % 3];
      changed.data[i] = std::uint8_t(std::lround(255.0f * std::clamp(x, 0.0f, 1.0f)));
    }
    v.image = std::move(changed);
  }
  return data;
}

// The held-out PSNR with the transforms clearly above the PSNR without: the splats learn the
// scene instead of an average of the exposures. A grey background keeps the gains from clipping
// the background (clipping is not affine), so the comparison measures the compensation alone.
// Measured at full resolution (1200 steps, 50 per training view): none 25.1 dB, affine 29.1 dB
// (29.7 before the mean transform was held at the identity: these 24 gains average 1 only
// roughly); the same training on the unchanged images reaches 30.0 dB.
TEST(AppearanceSlow, AffineRecoversHeldOutPsnrUnderExposureChanges) {
  const Dataset data = with_exposure_changes(load_small({0.5f, 0.5f, 0.5f}));
  Config cfg = small_config(1200);
  cfg.data.background = {0.5, 0.5, 0.5};
  cfg.train.coarse_factor = 1;  // the figures above
  const RasterSettings rs = final_raster_settings(cfg);
  double psnr[2];
  for (const AppearanceKind kind : {AppearanceKind::None, AppearanceKind::Affine}) {
    cfg.train.appearance = kind;
    auto backend = make_backend(cfg.backend);
    Trainer t(cfg, data, *backend);
    t.initialize();
    t.train(nullptr);
    psnr[int(kind)] = evaluate(*backend, data.test, rs, "").mean_psnr;
  }
  std::printf("held-out PSNR: none %.2f dB, affine %.2f dB\n", psnr[0], psnr[1]);
  EXPECT_GT(psnr[1], psnr[0] + 3.0) << "none " << psnr[0] << ", affine " << psnr[1];
}

// Training keeps the mean transform at the identity (the splats carry the mean appearance) while
// the transforms themselves move apart to follow the exposures.
TEST(Appearance, TrainingKeepsTheMeanTransformAtTheIdentity) {
  const Dataset data = with_exposure_changes(load_small({0.5f, 0.5f, 0.5f}));
  Config cfg = small_config(120);
  cfg.data.background = {0.5, 0.5, 0.5};
  cfg.train.appearance = AppearanceKind::Affine;
  const AppearanceState app = trained_run(cfg, data).state.appearance;
  ASSERT_EQ(app.images(), data.train.size());
  double spread = 0;
  for (std::size_t k = 0; k < kAppearanceFloats; ++k) {
    double mean = 0;
    for (std::size_t i = 0; i < app.images(); ++i) mean += app.params[i * kAppearanceFloats + k];
    mean /= double(app.images());
    EXPECT_NEAR(mean, appearance_identity(k), 1e-6) << k;
    for (std::size_t i = 0; i < app.images(); ++i)
      spread = std::max(spread, std::abs(app.params[i * kAppearanceFloats + k] - mean));
  }
  EXPECT_GT(spread, 1e-3);  // they did move
}

// A run with transforms resumes bit for bit: the checkpoint carries them and their moments.
TEST(Appearance, ResumeIsExact) {
  Config cfg = small_config(40);
  cfg.train.appearance = AppearanceKind::Affine;
  cfg.output.checkpoint_every = 17;
  const Checkpoint c = test::expect_resume_exact(cfg, load_small(), 17);
  EXPECT_EQ(c.appearance.size(), 24 * kAppearanceFloats);
  EXPECT_NE(c.appearance, AppearanceState::identity(24).params);  // they trained
}

// appearance = affine from a checkpoint without transforms starts them at the identity; a
// checkpoint with transforms and appearance = none is an error naming the key.
TEST(Appearance, ResumeAcrossTheSetting) {
  Config cfg = small_config(6);
  Config affine = cfg;
  affine.train.appearance = AppearanceKind::Affine;
  affine.train.iterations = 8;
  const test::AcrossSetting r = test::resume_across_setting(cfg, affine, load_small());
  ASSERT_TRUE(r.without.appearance.empty());
  EXPECT_EQ(r.resumed.appearance.params, AppearanceState::identity(24).params);
  EXPECT_EQ(r.resumed.appearance.m, std::vector<float>(24 * kAppearanceFloats, 0.0f));
  ASSERT_EQ(r.with.appearance.size(), 24 * kAppearanceFloats);
  test::expect_contains(r.error, {"appearance transforms", "train.appearance"});
}

// A state whose transforms do not fit the training images, or whose moments do not fit its
// transforms, is refused by the backend with both counts named, whichever is set first.
TEST(Appearance, StatesThatDoNotFitTheImagesAreRefused) {
  const Dataset data = load_small();
  const std::vector<const Image8*> two{&data.train[0].image, &data.train[1].image};
  TrainState st;
  st.appearance = AppearanceState::identity(3);
  auto b = make_backend(small_config(1).backend);
  b->set_images(two);
  test::expect_contains(test::error_of([&] { b->set_state(st); }),
                        {"3 appearance transforms for 2 training images"});
  auto c = make_backend(small_config(1).backend);
  c->set_state(st);
  test::expect_contains(test::error_of([&] { c->set_images(two); }),
                        {"3 appearance transforms for 2 training images"});
  st.appearance = AppearanceState::identity(2);
  st.appearance.v.pop_back();
  test::expect_contains(test::error_of([&] { b->set_state(st); }),
                        {"appearance state of 24 parameters and 24 / 23 moments"});
}

// ---- Colour-corrected PSNR --------------------------------------------------------------------

Image random_rgb(int w, int h, float lo, float hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Image img(w, h, 3);
  for (float& x : img.data) x = u(rng);
  return img;
}

double variance_psnr(const Image& target) {  // the PSNR of each channel's mean
  double se = 0;
  for (int c = 0; c < 3; ++c) {
    double mean = 0;
    for (std::size_t p = 0; p < target.pixels(); ++p) mean += target.data[3 * p + c];
    mean /= double(target.pixels());
    for (std::size_t p = 0; p < target.pixels(); ++p)
      se += (target.data[3 * p + c] - mean) * (target.data[3 * p + c] - mean);
  }
  return 10.0 * std::log10(double(target.data.size()) / se);
}

// A render off by an exposure and a colour cast: the correction finds the map's inverse.
TEST(Metrics, ColorCorrectionUndoesAnAffineColourMap) {
  const Image target = random_rgb(64, 48, 0.2f, 0.8f, 1);
  const float m[12] = {0.9f, 0.05f, 0.0f, 0.03f, 0.02f, 1.1f, 0.0f, -0.05f, 0.0f, 0.1f, 0.8f, 0.1f};
  Image render = target;
  for (std::size_t p = 0; p < target.pixels(); ++p)
    appearance_pixel(m, &target.data[3 * p], &render.data[3 * p]);
  const double plain = psnr(render, target), corrected = color_corrected_psnr(render, target);
  std::printf("off by an affine map: PSNR %.2f dB, colour-corrected %.2f dB\n", plain, corrected);
  EXPECT_LT(plain, 30.0);
  EXPECT_GT(corrected, 80.0);
}

// The identity is one of the maps tried, so the correction never loses; a render that carries
// no information (noise, a flat grey) is corrected to the target's mean colour at best.
TEST(Metrics, ColorCorrectedPsnrIsNeverBelowThePsnr) {
  const Image target = random_rgb(80, 60, 0.0f, 1.0f, 2);
  for (std::uint32_t seed = 3; seed < 8; ++seed) {
    Image render = target;  // the target plus noise, partly out of range
    const Image noise = random_rgb(80, 60, -0.3f, 0.3f, seed);
    for (std::size_t i = 0; i < render.data.size(); ++i) render.data[i] += noise.data[i];
    EXPECT_GE(color_corrected_psnr(render, target), psnr(render, target) - 1e-9) << seed;
  }
  const Image unrelated = random_rgb(80, 60, 0.0f, 1.0f, 9);
  EXPECT_GE(color_corrected_psnr(unrelated, target), psnr(unrelated, target));
  EXPECT_NEAR(color_corrected_psnr(unrelated, target), variance_psnr(target), 0.05);
  const Image grey(80, 60, 3, 0.5f);  // x^T x is singular without the ridge
  const double flat = color_corrected_psnr(grey, target);
  EXPECT_TRUE(std::isfinite(flat));
  EXPECT_NEAR(flat, variance_psnr(target), 1e-3);
}

}  // namespace
}  // namespace splat
