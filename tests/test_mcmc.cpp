// MCMC densification on the CPU reference: the relocation math, the refine tick's invariants,
// noise and regularizers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/finite.h"
#include "cpu/cpu_backend.h"
#include "cpu/mcmc_cpu.h"
#include "cpu/pipeline.h"
#include "engine/mcmc.h"
#include "strategy/mcmc/mcmc_tick_cpu.h"

namespace splat {
namespace {

// A random state of n splats with all five groups filled and nonzero ("poisoned") Adam moments,
// so a missing zeroing cannot pass.
TrainState random_state(std::size_t n, std::uint32_t seed, float dead_fraction) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  TrainState st;
  for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) {
    g->sh_degree = 1;
    g->resize(n);
    g->for_each_group([&](const char*, std::vector<float>& v) {
      for (float& x : v) x = u(rng) - 0.5f;
    });
  }
  for (std::size_t i = 0; i < n; ++i) {
    const float o = u(rng) < dead_fraction ? 0.001f : 0.02f + 0.9f * u(rng);
    st.params.raw_opacity[i] = std::log(o / (1 - o));
    for (int k = 0; k < 3; ++k) st.params.log_scales[i * 3 + k] = std::log(0.05f + 0.1f * u(rng));
  }
  for (float& x : st.adam_v.sh) x = std::abs(x) + 0.1f;
  return st;
}

bool slot_moments_zero(const TrainState& st, std::size_t i) {
  bool zero = true;
  for (const Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group([&](const char*, const std::vector<float>& v) {
      const std::size_t w = v.size() / g->size();
      for (std::size_t k = 0; k < w; ++k) zero = zero && v[i * w + k] == 0.0f;
    });
  return zero;
}

TEST(Mcmc, RelocateOneCopyIsIdentity) {
  for (float o : {0.01f, 0.3f, 0.9f}) {
    const auto r = mcmc::relocate(o, 1);
    EXPECT_NEAR(r.opacity, o, 1e-6f);  // 1 - (1 - o) rounds in float
    EXPECT_NEAR(r.scale_factor, 1.0f, 1e-6f);
  }
}

TEST(Mcmc, RelocatedCopiesCompositeToTheOriginalOpacity) {
  // N stacked copies of opacity o' let 1 - (1 - o')^N = o through the centre (paper eq. 9).
  for (int n : {2, 3, 5, 10}) {
    const float o = 0.7f;
    const auto r = mcmc::relocate(o, n);
    EXPECT_NEAR(1.0f - std::pow(1.0f - r.opacity, float(n)), o, 1e-5f) << n;
    EXPECT_GT(r.scale_factor, 0.0f);
  }
}

// The rendered image of one splat and of its N relocated copies (same place, corrected opacity
// and scale) agree: the correction preserves the rendered distribution up to the paper's
// approximation. Measured max difference 0.01 to 0.03 of the image range; bound 0.05.
TEST(Mcmc, RelocationPreservesTheRenderedImage) {
  Gaussians one;
  one.sh_degree = 0;
  one.resize(1);
  one.means = {0.0f, 0.0f, 0.0f};
  one.log_scales = {std::log(0.3f), std::log(0.2f), std::log(0.25f)};
  one.quats = {0.9f, 0.1f, 0.3f, -0.2f};
  one.sh = {0.8f, -0.5f, 0.2f};
  std::array<double, 16> w2c = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 4, 0, 0, 0, 1};
  const Camera cam = Camera::from_w2c(w2c, 64, 64, 60, 60, 32, 32);
  RasterSettings rs;
  rs.sh_degree = 0;
  rs.background = {0.0f, 0.0f, 0.0f};
  for (float o : {0.3f, 0.8f}) {
    one.raw_opacity = {std::log(o / (1 - o))};
    const auto before = cpu::render_fwd(one, cam, rs).raster.image;
    for (int n : {2, 4}) {
      const auto r = mcmc::relocate(o, n);
      Gaussians copies = one;
      copies.resize(n);
      for (int i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k) {
          copies.means[i * 3 + k] = one.means[k];
          copies.log_scales[i * 3 + k] = one.log_scales[k] + std::log(r.scale_factor);
          copies.sh[i * 3 + k] = one.sh[k];
        }
        for (int k = 0; k < 4; ++k) copies.quats[i * 4 + k] = one.quats[k];
        copies.raw_opacity[i] = std::log(r.opacity / (1 - r.opacity));
      }
      const auto after = cpu::render_fwd(copies, cam, rs).raster.image;
      double worst = 0;
      for (std::size_t i = 0; i < before.size(); ++i)
        worst = std::max(worst, double(std::abs(before[i] - after[i])));
      EXPECT_LT(worst, 0.05) << "opacity " << o << ", " << n << " copies";
      std::printf("[ info ] relocation, opacity %.1f, %d copies: max pixel difference %.4f\n", o, n,
                  worst);
    }
  }
}

TEST(Mcmc, SamplingFollowsTheWeights) {
  const std::vector<double> w = {1.0, 0.0, 3.0, 6.0};
  const auto s = cpu::sample_by_weight(w, 20000, 42, mcmc::kAdd);
  std::vector<int> counts(4, 0);
  for (auto i : s) ++counts[i];
  EXPECT_EQ(counts[1], 0);  // zero weight is never drawn
  // Binomial standard deviation at n = 20000 is below 70: 5 sigma bounds.
  EXPECT_NEAR(counts[0], 2000, 350);
  EXPECT_NEAR(counts[2], 6000, 350);
  EXPECT_NEAR(counts[3], 12000, 350);
  EXPECT_EQ(s, cpu::sample_by_weight(w, 20000, 42, mcmc::kAdd));  // counter RNG: reproducible
}

TEST(Mcmc, RefineRelocatesDeadGrowsAndZeroesMoments) {
  TrainState st = random_state(500, 3, 0.2f);
  const TrainState before = st;
  McmcRefineSettings s;
  s.min_opacity = 0.005f;
  s.target_count = 525;
  s.seed = 77;
  const RefineStats r = cpu::mcmc_refine(st, s);
  std::size_t dead = 0;
  for (float x : before.params.raw_opacity) dead += sigmoid(x) <= s.min_opacity;
  ASSERT_GT(dead, 50u);
  EXPECT_EQ(r.dead, dead);
  EXPECT_EQ(r.added, 25u);
  EXPECT_EQ(r.count, 525u);
  EXPECT_EQ(st.params.size(), 525u);
  EXPECT_EQ(st.adam_m.size(), 525u);
  // No dead splat is left, every touched slot has zero moments, every untouched slot is unchanged.
  std::size_t touched = 0;
  for (std::size_t i = 0; i < 500; ++i) {
    EXPECT_GT(sigmoid(st.params.raw_opacity[i]), s.min_opacity) << i;
    const bool changed = st.params.raw_opacity[i] != before.params.raw_opacity[i] ||
                         st.params.means[i * 3] != before.params.means[i * 3];
    if (changed) {
      ++touched;
      EXPECT_TRUE(slot_moments_zero(st, i)) << "slot " << i;
    } else {
      EXPECT_EQ(st.adam_m.sh[i * 12], before.adam_m.sh[i * 12]) << "untouched slot " << i;
    }
  }
  EXPECT_GE(touched, dead);
  for (std::size_t i = 500; i < 525; ++i) EXPECT_TRUE(slot_moments_zero(st, i)) << "new slot " << i;
}

// densify.mcmc_grad_power: growth and relocation draw by opacity times the mean gradient. Half the
// splats carry a gradient 100x the other half's (the same opacities): with power 1 they take
// nearly all the draws, with power 0 (the paper) about half, and the weights are
// mcmc::sample_weight's.
TEST(Mcmc, GradientPowerDrawsWhereTheGradientIs) {
  const std::size_t n = 400;
  adc::Stats grads;
  grads.reset(n);
  for (std::size_t i = 0; i < n; ++i) {
    grads.count[i] = 4;
    grads.grad2d[i] = 4 * (i % 2 ? 1e-3f : 1e-5f);  // odd splats: mean 1e-3
  }
  const auto odd_share = [&](float power) {
    TrainState st = random_state(n, 21, 0.0f);
    for (std::size_t i = 0; i < n; ++i) st.params.raw_opacity[i] = 0.0f;  // opacity 1/2 each
    const TrainState before = st;
    McmcRefineSettings s;
    s.target_count = 2 * n;
    s.seed = 5;
    s.grad_power = power;
    EXPECT_EQ(cpu::mcmc_refine(st, s, grads).added, n);
    // A drawn source was corrected (its opacity lowered): count the odd ones among them.
    std::size_t odd = 0, drawn = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (st.params.raw_opacity[i] != before.params.raw_opacity[i]) ++drawn, odd += i % 2;
    EXPECT_GT(drawn, 50u) << power;
    return double(odd) / double(drawn);
  };
  EXPECT_NEAR(odd_share(0.0f), 0.5, 0.1);
  EXPECT_GT(odd_share(1.0f), 0.97);           // weights 1e-3 against 1e-5: ~99% of the draws
  const double sqrt_share = odd_share(0.5f);  // 10x the weight: ~91%
  EXPECT_GT(sqrt_share, 0.8);
  EXPECT_LT(sqrt_share, 0.97);
  EXPECT_DOUBLE_EQ(mcmc::sample_weight(0.5, 4e-3f, 4, 1.0f),
                   0.5 * (double(4e-3f) / 4 + mcmc::kGradFloor));
  EXPECT_DOUBLE_EQ(mcmc::sample_weight(0.5, 0.0f, 0, 2.0f),
                   0.5 * mcmc::kGradFloor * mcmc::kGradFloor);
  EXPECT_EQ(mcmc::sample_weight(0.25, 1.0f, 1, 0.0f), 0.25);  // power 0: the opacity alone
  // Statistics of another count are an error, not a silent misread.
  TrainState st = random_state(n + 1, 22, 0.0f);
  McmcRefineSettings s;
  s.target_count = n + 10;
  s.grad_power = 1.0f;
  EXPECT_THROW(cpu::mcmc_refine(st, s, grads), Error);
}

TEST(Mcmc, ManyTicksKeepInvariants) {
  TrainState st = random_state(300, 9, 0.1f);
  for (int tick = 0; tick < 30; ++tick) {
    // Kill a third of the splats every few ticks so the live set shrinks and regrows.
    if (tick % 5 == 4)
      for (std::size_t i = 0; i < st.params.size(); i += 3) st.params.raw_opacity[i] = -8.0f;
    const std::size_t n = st.params.size();
    McmcRefineSettings s;
    s.target_count = std::min<std::size_t>(600, std::size_t(n * 1.05));
    s.seed = 1000 + tick;
    const RefineStats r = cpu::mcmc_refine(st, s);
    EXPECT_EQ(r.count, s.target_count);
    for (const Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) {
      EXPECT_EQ(g->size(), r.count);
      g->for_each_group([&](const char* name, const std::vector<float>& v) {
        for (float x : v) ASSERT_TRUE(std::isfinite(x)) << name;
      });
    }
    for (float x : st.params.raw_opacity) EXPECT_GT(sigmoid(x), s.min_opacity);
  }
  EXPECT_EQ(st.params.size(), 600u);  // capped
}

TEST(Mcmc, NoiseMovesTransparentSplatsOnly) {
  TrainState st = random_state(200, 5, 0.0f);
  for (std::size_t i = 0; i < 200; ++i) st.params.raw_opacity[i] = i < 100 ? -6.0f : 6.0f;
  Gaussians p = st.params;
  cpu::inject_noise(p, 1.0, 11);
  double moved_transparent = 0, moved_opaque = 0;
  for (std::size_t i = 0; i < 200; ++i)
    for (int k = 0; k < 3; ++k)
      (i < 100 ? moved_transparent : moved_opaque) +=
          std::abs(p.means[i * 3 + k] - st.params.means[i * 3 + k]);
  EXPECT_GT(moved_transparent, 1e-3);
  EXPECT_LT(moved_opaque, 1e-6 * moved_transparent + 1e-12);
}

// The noise scales with a splat's covariance: a huge, nearly transparent splat (an SfM outlier's
// initial scale) leaves any reach within a few steps. A few such strays are not a divergence of the
// run; a whole group beyond the reach (a learning rate far too large) is.
TEST(Mcmc, NoiseCarriesHugeSplatsFarWithoutADivergence) {
  TrainState st = random_state(200, 5, 0.0f);
  st.params.raw_opacity[0] = -4.0f;                                       // opacity 0.018
  for (int k = 0; k < 3; ++k) st.params.log_scales[k] = std::log(30.0f);  // 30 units
  const DivergenceLimits limits{100.0f};
  auto backend = make_cpu_backend(1);
  for (int step = 0; step < 10; ++step) cpu::inject_noise(st.params, 400.0, 100 + step);
  EXPECT_GT(
      std::abs(st.params.means[0]) + std::abs(st.params.means[1]) + std::abs(st.params.means[2]),
      100.0f);
  backend->set_state(st);
  EXPECT_TRUE(backend->diverged_groups(limits).empty());
  for (float& x : st.params.means) x += 1000.0f;
  backend->set_state(st);
  EXPECT_EQ(backend->diverged_groups(limits), std::vector<std::string>{"means"});
}

TEST(Mcmc, RegularizerGradientsMatchFiniteDifferences) {
  TrainState st = random_state(40, 2, 0.0f);
  const double oreg = 0.01, sreg = 0.02;
  auto reg = [&](const Gaussians& g) {
    double o = 0, s = 0;
    for (float x : g.raw_opacity) o += sigmoid(double(x));
    for (float x : g.log_scales) s += std::exp(double(x));
    return oreg * o / double(g.size()) + sreg * s / double(3 * g.size());
  };
  Gaussians grads = st.params;
  grads.for_each_group(
      [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  cpu::add_regularizer_grads(st.params, grads, oreg, sreg);
  for (std::size_t i : {0u, 7u, 39u}) {
    Gaussians a = st.params, b = st.params;
    const float h = 1e-2f;
    a.raw_opacity[i] += h, b.raw_opacity[i] -= h;
    EXPECT_NEAR(grads.raw_opacity[i], (reg(a) - reg(b)) / (2 * h), 1e-6);
    a = st.params, b = st.params;
    a.log_scales[i * 3 + 1] += h, b.log_scales[i * 3 + 1] -= h;
    EXPECT_NEAR(grads.log_scales[i * 3 + 1], (reg(a) - reg(b)) / (2 * h), 1e-6);
  }
}

}  // namespace
}  // namespace splat
