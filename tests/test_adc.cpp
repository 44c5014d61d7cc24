// ADC (3DGS adaptive density control) on the CPU reference: the statistics, the clone / split /
// prune decisions on a hand-made state, the compacted order with Adam state moving along, the
// split samples' distribution, the opacity reset, the strategy's schedule, and a short training.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "cpu/adc_cpu.h"
#include "cpu/loss_cpu.h"
#include "cpu/pipeline.h"
#include "cpu/testing.h"
#include "engine/adc.h"
#include "engine/target.h"
#include "forwarding_backend.h"
#include "io/demo_scene.h"
#include "null_backend.h"
#include "strategy/adc/adc_tick_cpu.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/densify.h"
#include "train/trainer.h"

namespace splat {
namespace {

float logit(float o) {
  return std::log(o / (1 - o));
}

// n splats, SH degree 1, each slot tagged by sh[slot * 12] = slot so a test can trace where a
// refined slot came from. Adam moments are poisoned with nonzero values unique to the slot.
TrainState tagged_state(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  TrainState st;
  for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) {
    g->sh_degree = 1;
    g->resize(n);
    g->for_each_group([&](const char*, std::vector<float>& v) {
      for (float& x : v) x = u(rng);
    });
  }
  for (std::size_t i = 0; i < n; ++i) {
    st.params.sh[i * 12] = float(i);
    st.params.raw_opacity[i] = logit(0.5f);
    for (int k = 0; k < 3; ++k) st.params.log_scales[i * 3 + k] = std::log(0.01f);
  }
  // Second moments stay valid (positive) and nonzero.
  st.adam_v.for_each_group([](const char*, std::vector<float>& v) {
    for (float& x : v) x = std::abs(x) + 0.5f;
  });
  st.adam_step = 123;
  return st;
}

std::vector<float> slot(const Gaussians& g, std::size_t i) {
  std::vector<float> out;
  g.for_each_group([&](const char*, const std::vector<float>& v) {
    const std::size_t w = v.size() / g.size();
    out.insert(out.end(), v.begin() + i * w, v.begin() + (i + 1) * w);
  });
  return out;
}
bool all_zero(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; });
}
std::uint32_t tag_of(const Gaussians& g, std::size_t i) {
  return std::uint32_t(g.sh[i * 12]);
}

// ---- Statistics ---------------------------------------------------------------------------------

TEST(Adc, AccumulateScalesToHalfImageAndSkipsCulled) {
  adc::Stats s;
  s.reset(4);
  const std::vector<int> radii = {3, 3, 0, 0, 0, 2, 5, 0};  // splat 1 culled; 2 and 3 half-zero
  const std::vector<float> v = {0.001f, -0.002f, 1.0f, 1.0f, 0.0f, 0.004f, -0.003f, 0.0f};
  cpu::adc_accumulate(s, radii, v, 100, 50);
  cpu::adc_accumulate(s, radii, v, 100, 50);
  // (0.001 * 50, -0.002 * 25) = (0.05, -0.05): norm 0.0707 per step.
  EXPECT_NEAR(s.grad2d[0], 2 * std::sqrt(0.005), 1e-7);
  EXPECT_EQ(s.count[0], 2);
  EXPECT_EQ(s.grad2d[1], 0.0f);
  EXPECT_EQ(s.count[1], 0);
  EXPECT_NEAR(s.grad2d[2], 2 * 0.1, 1e-7);
  EXPECT_EQ(s.count[2], 2);
  EXPECT_NEAR(s.grad2d[3], 2 * 0.15, 1e-7);
  EXPECT_EQ(s.count[3], 2);
}

// The backend's statistics are those of the stages it runs, only when asked for.
TEST(Adc, BackendStepAccumulatesTheProjectedGradients) {
  TrainState st = tagged_state(300, 4);
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < 300; ++i)
    for (int k = 0; k < 3; ++k) {
      st.params.means[i * 3 + k] = (k < 2 ? 2.5f : 0.8f) * u(rng);  // some off screen
      st.params.log_scales[i * 3 + k] = std::log(0.05f + 0.03f * u(rng));
    }
  st.params.sh.assign(st.params.sh.size(), 0.1f);  // no tags: plain colors
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group(
        [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  std::array<double, 16> w2c = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 0, 0, 0, 1};
  const Camera cam = Camera::from_w2c(w2c, 40, 30, 40, 40, 20, 15);
  Image8 target(40, 30, 3);
  for (std::size_t i = 0; i < target.data.size(); ++i) target.data[i] = std::uint8_t(i % 7 * 36);
  StepSettings s;
  s.raster.sh_degree = 1;
  s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};

  BackendConfig cfg;
  cfg.type = BackendKind::Cpu;
  auto b = make_backend(cfg);
  b->set_images({&target});
  b->set_state(st);
  b->step(cam, 0, s);  // off: nothing accumulates
  EXPECT_TRUE(all_zero(cpu::adc_stats(*b).grad2d));

  // One step by hand from the state the backend holds now.
  const TrainState now = b->state();
  const auto fwd = cpu::render_fwd(now.params, cam, s.raster);
  const auto loss = cpu::photometric_loss(fwd.raster.image, target_image(target).data, 40, 30,
                                          float(s.ssim_lambda), true);
  const auto v = cpu::rasterize_bwd(fwd.projected, fwd.isect, 40, 30, s.raster, loss.v_image, {});
  adc::Stats want;
  want.reset(300);
  cpu::adc_accumulate(want, fwd.projected.radii, v.means2d, 40, 30);

  s.accumulate_grad2d = true;
  b->step(cam, 0, s);
  const adc::Stats& got = cpu::adc_stats(*b);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.grad2d, want.grad2d);
  std::size_t visible = 0;
  for (auto c : got.count) visible += c;
  EXPECT_GT(visible, 50u);
  EXPECT_LT(visible, 300u);  // some splats are off screen
  b->refine(AdcTick(AdcRefineSettings{}));
  EXPECT_EQ(cpu::adc_stats(*b).size(), b->num_splats());
  EXPECT_TRUE(all_zero(cpu::adc_stats(*b).grad2d));
}

// ---- Decisions on a hand-made state ------------------------------------------------------------

constexpr double kExtent = 2.0;  // clone up to scale 0.02, prune above 0.2

struct HandMade {
  TrainState st;
  adc::Stats stats;
};

// Splat roles (mean statistic, max scale, opacity):
//   0 keep (1e-4, 0.01)     1 clone (1e-3, 0.01)          2 split (1e-3, 0.05)
//   3 transparent, pruned   4 clone but transparent       5 too big (0.3), low statistic
//   6 split, children 0.25  7 never visible               8 statistic exactly at the threshold
//   9 split but transparent 10 clone, scale exactly at the clone threshold
HandMade hand_made() {
  HandMade h{tagged_state(11, 1), {}};
  h.stats.reset(11);
  const float grow = 0.001f;
  auto set = [&](std::size_t i, float mean, int count, float scale, float opacity) {
    h.stats.grad2d[i] = mean * float(count);
    h.stats.count[i] = count;
    // Anisotropic: the max axis decides.
    h.st.params.log_scales[i * 3 + 0] = std::log(scale * 0.5f);
    h.st.params.log_scales[i * 3 + 1] = std::log(scale);
    h.st.params.log_scales[i * 3 + 2] = std::log(scale * 0.25f);
    h.st.params.raw_opacity[i] = logit(opacity);
  };
  set(0, 1e-4f, 4, 0.01f, 0.5f);
  set(1, grow, 3, 0.01f, 0.5f);
  set(2, grow, 5, 0.05f, 0.5f);
  set(3, 0.0f, 2, 0.01f, 0.001f);
  set(4, grow, 2, 0.01f, 0.001f);
  set(5, 0.0f, 2, 0.3f, 0.5f);
  set(6, grow, 2, 0.4f, 0.5f);
  set(7, 0.0f, 0, 0.01f, 0.5f);
  set(8, 0.0f, 1, 0.01f, 0.5f);
  h.stats.grad2d[8] = 0.0002f;  // mean == grow_grad2d: not above
  set(9, grow, 2, 0.05f, 0.001f);
  set(10, grow, 1, 0.01f, 0.5f);
  AdcRefineSettings s;
  s.scene_extent = kExtent;
  h.st.params.log_scales[10 * 3 + 1] = adc::thresholds(s).clone_log_scale;  // at: cloned
  return h;
}

void expect_refined(const HandMade& h,
                    bool prune_big,
                    const std::vector<std::uint32_t>& order,
                    std::size_t cloned,
                    std::size_t split,
                    std::size_t pruned,
                    std::size_t kept,
                    std::size_t clones) {
  TrainState st = h.st;
  adc::Stats stats = h.stats;
  AdcRefineSettings s;
  s.scene_extent = kExtent;
  s.prune_big = prune_big;
  s.seed = 77;
  const RefineStats r = cpu::adc_refine(st, stats, s);
  const std::string tag = prune_big ? "prune_big" : "no prune_big";
  EXPECT_EQ(r.cloned, cloned) << tag;
  EXPECT_EQ(r.split, split) << tag;
  EXPECT_EQ(r.pruned, pruned) << tag;
  EXPECT_EQ(r.count, order.size()) << tag;
  ASSERT_EQ(st.params.size(), order.size()) << tag;
  EXPECT_EQ(st.adam_m.size(), order.size());
  EXPECT_EQ(st.adam_v.size(), order.size());
  EXPECT_EQ(st.adam_step, 123);
  std::vector<std::uint32_t> got;
  for (std::size_t j = 0; j < st.params.size(); ++j) got.push_back(tag_of(st.params, j));
  EXPECT_EQ(got, order) << tag;
  // Statistics restart from zero for the new count.
  EXPECT_EQ(stats.size(), order.size());
  EXPECT_TRUE(all_zero(stats.grad2d));
  EXPECT_TRUE(std::all_of(stats.count.begin(), stats.count.end(), [](int c) { return c == 0; }));

  const std::size_t children = (order.size() - kept - clones) / 2;
  for (std::size_t j = 0; j < order.size(); ++j) {
    const std::size_t i = order[j];
    const auto p = slot(st.params, j), src = slot(h.st.params, i);
    if (j < kept) {  // survivors: parameters and Adam state move with the splat
      EXPECT_EQ(p, src) << tag << " slot " << j;
      EXPECT_EQ(slot(st.adam_m, j), slot(h.st.adam_m, i)) << tag << " slot " << j;
      EXPECT_EQ(slot(st.adam_v, j), slot(h.st.adam_v, i)) << tag << " slot " << j;
      continue;
    }
    EXPECT_TRUE(all_zero(slot(st.adam_m, j)) && all_zero(slot(st.adam_v, j)))
        << tag << " new slot " << j;
    if (j < kept + clones) {
      EXPECT_EQ(p, src) << tag << " clone " << j;
      continue;
    }
    // Split child: offset drawn from the parent's Gaussian, scales / 1.6, the rest copied.
    const int child = j < kept + clones + children ? 0 : 1;
    float offset[3];
    adc::split_offset(&h.st.params.log_scales[i * 3], &h.st.params.quats[i * 4], s.seed, i, child,
                      offset);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(p[k], src[k] + offset[k]) << tag << " child " << j;
      EXPECT_EQ(p[3 + k], src[3 + k] - adc::config::log_split_shrink) << tag << " child " << j;
      EXPECT_NE(offset[k], 0.0f);
    }
    for (std::size_t k = 6; k < p.size(); ++k)
      EXPECT_EQ(p[k], src[k]) << tag << " child " << j << " float " << k;
  }
}

TEST(Adc, RefineDecisionsOnHandMadeState) {
  const HandMade h = hand_made();
  // Kept originals, clones, first children, second children.
  expect_refined(h, false, {0, 1, 5, 7, 8, 10, 1, 10, 2, 6, 2, 6}, 3, 3, 5, 6, 2);
  // Too big: 5 itself, and 6's children (0.4 / 1.6 = 0.25 > 0.2).
  expect_refined(h, true, {0, 1, 7, 8, 10, 1, 10, 2, 2}, 3, 3, 8, 5, 2);
}

TEST(Adc, CompactionKeepsOrderAndMovesAdamState) {
  const std::size_t n = 2000;
  TrainState st = tagged_state(n, 9);
  adc::Stats stats;
  stats.reset(n);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    stats.count[i] = int(u(rng) * 5);
    stats.grad2d[i] = float(stats.count[i]) * 0.0004f * u(rng);
    st.params.raw_opacity[i] = logit(u(rng) < 0.2f ? 0.002f : 0.1f + 0.8f * u(rng));
    const bool small = u(rng) < 0.4f;  // clone candidates; the rest split, a few too big
    for (int k = 0; k < 3; ++k)
      st.params.log_scales[i * 3 + k] =
          std::log(small ? 0.002f + 0.006f * u(rng) : 0.02f + 0.1f * u(rng));
  }
  st.appearance = AppearanceState::identity(3);  // per image: the tick leaves it as it is
  st.appearance.params[5] = 0.5f;
  const TrainState before = st;
  AdcRefineSettings s;
  s.prune_big = true;
  const RefineStats r = cpu::adc_refine(st, stats, s);
  EXPECT_EQ(st.appearance.params, before.appearance.params);
  std::printf("[ info ] %zu splats: %zu cloned, %zu split, %zu pruned -> %zu\n", n, r.cloned,
              r.split, r.pruned, r.count);
  ASSERT_GT(r.cloned, 50u);
  ASSERT_GT(r.split, 50u);
  ASSERT_GT(r.pruned, 200u);
  // Segments: survivors, then new slots (zero moments), each in ascending source order.
  std::size_t j = 0;
  for (; j < r.count && !all_zero(slot(st.adam_m, j)); ++j) {
    const std::uint32_t i = tag_of(st.params, j);
    if (j > 0) {
      EXPECT_LT(tag_of(st.params, j - 1), i) << "survivor order at " << j;
    }
    EXPECT_EQ(slot(st.params, j), slot(before.params, i));
    EXPECT_EQ(slot(st.adam_m, j), slot(before.adam_m, i));
    EXPECT_EQ(slot(st.adam_v, j), slot(before.adam_v, i));
  }
  const std::size_t kept = j;
  EXPECT_EQ(r.count - kept, r.cloned + 2 * r.split - (r.pruned - (n - kept - r.split)));
  std::size_t descents = 0;
  for (; j < r.count; ++j) {
    EXPECT_TRUE(all_zero(slot(st.adam_m, j)) && all_zero(slot(st.adam_v, j))) << "new slot " << j;
    if (j > kept) descents += tag_of(st.params, j) < tag_of(st.params, j - 1);
  }
  EXPECT_LE(descents, 2u);  // clones | first children | second children, each ascending
}

// Children sample N(mean, R S^2 R^T) of the parent (3DGS), not of their shrunk selves.
TEST(Adc, SplitSamplesFollowTheParentGaussian) {
  TrainState one = tagged_state(1, 2);
  one.params.means = {0.3f, -0.2f, 1.0f};
  const float s[3] = {0.2f, 0.05f, 0.1f};
  for (int k = 0; k < 3; ++k) one.params.log_scales[k] = std::log(s[k]);
  const float q[4] = {0.8f, 0.3f, -0.4f, 0.2f};
  for (int k = 0; k < 4; ++k) one.params.quats[k] = 2.0f * q[k];  // unnormalized on purpose
  double cov[3][3] = {}, mean[3] = {};
  const int draws = 3000;
  for (int t = 0; t < draws; ++t) {
    TrainState st = one;
    adc::Stats stats;
    stats.reset(1);
    stats.grad2d[0] = 1.0f;
    stats.count[0] = 1;
    AdcRefineSettings rs;
    rs.seed = mcmc::hash64(1, std::uint64_t(t), mcmc::kSplit);
    ASSERT_EQ(cpu::adc_refine(st, stats, rs).split, 1u);
    for (int c = 0; c < 2; ++c) {
      double d[3];
      for (int k = 0; k < 3; ++k) d[k] = st.params.means[c * 3 + k] - one.params.means[k];
      for (int a = 0; a < 3; ++a) {
        mean[a] += d[a];
        for (int b = 0; b < 3; ++b) cov[a][b] += d[a] * d[b];
      }
    }
  }
  const double qn = std::sqrt(0.8 * 0.8 + 0.3 * 0.3 + 0.4 * 0.4 + 0.2 * 0.2);
  const Mat3<double> R = cpu::quat_to_rotmat(0.8 / qn, 0.3 / qn, -0.4 / qn, 0.2 / qn);
  double err = 0, norm = 0;
  for (int a = 0; a < 3; ++a) {
    EXPECT_NEAR(mean[a] / (2 * draws), 0.0, 0.01);  // sigma <= 0.2, 6000 draws: 5 sigma ~ 0.013
    for (int b = 0; b < 3; ++b) {
      double want = 0;
      for (int k = 0; k < 3; ++k) want += R[a][k] * double(s[k]) * double(s[k]) * R[b][k];
      err += std::pow(cov[a][b] / (2 * draws) - want, 2);
      norm += want * want;
    }
  }
  // Sampling error of a covariance from 6000 draws is ~2 %.
  EXPECT_LT(std::sqrt(err / norm), 0.08);
}

TEST(Adc, OpacityResetClampsAndZeroesOpacityMoments) {
  TrainState st = tagged_state(5, 3);
  const float o[5] = {0.001f, 0.009f, 0.011f, 0.5f, 0.99f};
  for (int i = 0; i < 5; ++i) st.params.raw_opacity[i] = logit(o[i]);
  const TrainState before = st;
  cpu::adc_reset_opacity(st, 0.01f);
  const float max_raw = adc::logit_threshold(0.01);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(st.params.raw_opacity[i], o[i] < 0.01f ? before.params.raw_opacity[i] : max_raw) << i;
    EXPECT_EQ(st.adam_m.raw_opacity[i], 0.0f);
    EXPECT_EQ(st.adam_v.raw_opacity[i], 0.0f);
  }
  EXPECT_NEAR(sigmoid(max_raw), 0.01f, 1e-7f);
  // Nothing else moves.
  EXPECT_EQ(st.params.means, before.params.means);
  EXPECT_EQ(st.params.log_scales, before.params.log_scales);
  EXPECT_EQ(st.adam_m.sh, before.adam_m.sh);
  EXPECT_EQ(st.adam_v.means, before.adam_v.means);
}

// ---- The strategy's schedule -------------------------------------------------------------------

// Records what the densifier asks of a backend.
class RecordingBackend final : public test::NullBackend {
 public:
  std::vector<std::pair<std::int64_t, AdcRefineSettings>> refines;
  std::vector<std::pair<std::int64_t, float>> resets;

  RefineStats refine(RefineTick& tick) override {
    if (const auto* t = dynamic_cast<const AdcTick*>(&tick)) refines.push_back({now, t->settings});
    if (const auto* t = dynamic_cast<const OpacityResetTick*>(&tick))
      resets.push_back({now, t->max_opacity});
    return {};
  }
};

TEST(Adc, ScheduleFollowsDefaultStrategy) {
  Config cfg;
  cfg.densify.strategy = "adc";
  cfg.densify.refine_start = 500;
  cfg.densify.refine_every = 100;
  cfg.densify.refine_stop = 15000;
  cfg.densify.reset_every = 3000;
  auto d = make_densifier(cfg, 3.5);
  RecordingBackend b;
  const std::size_t accumulating =
      test::run_schedule(*d, b, 20000, [&](std::int64_t done, const auto& r) {
        EXPECT_EQ(r.has_value(), !b.refines.empty() && b.refines.back().first == done);
      });
  EXPECT_EQ(accumulating, 14999u);    // statistics only feed ticks before refine_stop
  ASSERT_EQ(b.refines.size(), 144u);  // 600, 700, ..., 14900
  EXPECT_EQ(b.refines.front().first, 600);
  EXPECT_EQ(b.refines.back().first, 14900);
  for (const auto& [at, s] : b.refines) {
    EXPECT_EQ(s.prune_big, at > 3000) << at;
    EXPECT_EQ(s.scene_extent, 3.5);
    EXPECT_EQ(s.grow_grad2d, 0.0002f);
    EXPECT_EQ(s.prune_opacity, 0.005f);
  }
  EXPECT_NE(b.refines[0].second.seed, b.refines[1].second.seed);
  ASSERT_EQ(b.resets.size(), 4u);  // 3000 ... 12000; none from refine_stop on
  EXPECT_EQ(b.resets[0].first, 3000);
  EXPECT_EQ(b.resets[3].first, 12000);
  EXPECT_EQ(b.resets[0].second, 0.01f);
}

// ---- Training -----------------------------------------------------------------------------------

// Forwards to a real backend and records the ADC ticks.
class TickLog final : public test::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::vector<RefineStats> ticks;
  int resets = 0;

  RefineStats refine(RefineTick& tick) override {
    const RefineStats r = ForwardingBackend::refine(tick);
    if (dynamic_cast<const AdcTick*>(&tick)) ticks.push_back(r);
    resets += dynamic_cast<const OpacityResetTick*>(&tick) != nullptr;
    return r;
  }
};

TEST(AdcSlow, ShortTrainingChangesTheCountAndImproves) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  Config cfg;
  cfg.model.init_points = 2000;
  cfg.model.init_extent = 1.1;
  cfg.train.iterations = 300;
  cfg.train.log_every = 0;
  cfg.backend.type = BackendKind::Cpu;
  cfg.densify.strategy = "adc";
  cfg.densify.refine_start = 50;
  cfg.densify.refine_every = 50;
  cfg.densify.refine_stop = 260;  // ticks at 100, 150, 200, 250
  cfg.densify.reset_every = 200;  // one reset; big splats pruned at 250
  auto cpu_backend = make_backend(cfg.backend);
  TickLog log(*cpu_backend);
  Backend* backend = &log;
  Trainer t(cfg, data, *backend);
  t.initialize();
  const RasterSettings rs = final_raster_settings(cfg);
  const double psnr_before = evaluate(*backend, data.test, rs, "").mean_psnr;
  t.train(nullptr);
  const double psnr_after = evaluate(*backend, data.test, rs, "").mean_psnr;
  const std::size_t count = backend->num_splats();
  std::size_t cloned = 0, split = 0, pruned = 0;
  for (const RefineStats& r : log.ticks) {
    std::printf("[ info ] tick: %zu cloned, %zu split, %zu pruned -> %zu\n", r.cloned, r.split,
                r.pruned, r.count);
    cloned += r.cloned, split += r.split, pruned += r.pruned;
  }
  std::printf("[ info ] ADC: 2000 -> %zu splats, PSNR %.2f -> %.2f dB\n", count, psnr_before,
              psnr_after);
  EXPECT_EQ(log.ticks.size(), 4u);
  EXPECT_EQ(log.resets, 1);
  EXPECT_GT(cloned, 0u);
  EXPECT_GT(split, 0u);
  EXPECT_GT(pruned, 0u);
  EXPECT_NE(count, 2000u);
  EXPECT_GT(psnr_after, psnr_before + 6.0);
  EXPECT_GT(psnr_after, 20.0);
  const TrainState st = backend->state();
  ASSERT_EQ(st.adam_m.size(), count);
  for (const Gaussians* g : {&st.params, &st.adam_m, &st.adam_v})
    g->for_each_group([&](const char* name, const std::vector<float>& v) {
      for (float x : v) ASSERT_TRUE(std::isfinite(x)) << name;
    });
}

}  // namespace
}  // namespace splat
