// ADC densification on the GPU (cuda/adc_cuda.h) against the CPU reference (cpu/adc_cpu.h): the
// per-step statistics, refine ticks from the same state and statistics (same clone / split / prune
// sets, same compacted order, survivors bit-identical with their Adam state, zero moments on new
// slots, split children equal up to device-math ulps, zero tails past the count), the opacity
// reset, and invariants over many steps and ticks.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/math.h"
#include "cpu/adc_cpu.h"
#include "cpu/testing.h"
#include "cuda/cuda_backend.h"
#include "cuda/testing.h"
#include "engine/adc.h"
#include "engine/backend.h"
#include "parity_util.h"
#include "strategy/adc/adc_strategy.h"
#include "strategy/adc/adc_tick_cpu.h"
#include "train/backend_factory.h"
#include "train/config.h"

namespace splat::test {
namespace {

std::unique_ptr<Backend> backend_of(BackendKind kind) {
  BackendConfig cfg;
  cfg.type = kind;
  return make_backend(cfg);
}

double sync_count(const Backend& b, const std::string& name) {
  for (const auto& [key, value] : b.report())
    if (key == "sync." + name) return value;
  return 0;
}

// ---- Statistics ---------------------------------------------------------------------------------

// A step's scene for the statistics: n random splats before a noise target, zero moments.
struct StatsScene {
  Scene scene;
  Image8 target;
  TrainState st;
  StepSettings s;
};
StatsScene stats_scene(int n, int w, int h) {
  StatsScene u{random_scene(n, w, h, 777u + n), Image8(w, h, 3), {}, {}};
  const auto noise = random_vector(u.target.data.size(), 31);
  for (std::size_t i = 0; i < noise.size(); ++i)
    u.target.data[i] = std::uint8_t(std::lround(127.5f + 127.5f * noise[i]));
  u.st.params = u.scene.gaussians;
  u.st.adam_m = u.st.adam_v = u.st.params;
  for (Gaussians* g : {&u.st.adam_m, &u.st.adam_v})
    g->for_each_group(
        [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  u.s.raster.sh_degree = 3;
  u.s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};
  u.s.accumulate_grad2d = true;
  return u;
}

// The scene's step on the CPU and on the GPU backend.
std::pair<std::unique_ptr<Backend>, std::unique_ptr<Backend>> step_both(const StatsScene& u) {
  std::pair both{backend_of(BackendKind::Cpu), backend_of(BackendKind::Cuda)};
  std::vector<StepResult> losses;
  for (Backend* b : {both.first.get(), both.second.get()}) {
    b->set_images({&u.target});
    b->set_state(u.st);
    b->step(u.scene.camera, 0, u.s);
    b->collect_losses(losses, true);
  }
  return both;
}

TEST(ParityAdc, AccumulateMatchesCpu) {
  for (const auto& [n, w, h] : {std::tuple{600, 97, 61}, std::tuple{3000, 160, 120}}) {
    StatsScene u = stats_scene(n, w, h);
    const auto [cpu_b, gpu_b] = step_both(u);
    adc::Stats want = cpu::adc_stats(*cpu_b);
    const adc::Stats got = cuda::adc_stats(*gpu_b);
    const std::string tag =
        std::to_string(n) + " splats " + std::to_string(w) + "x" + std::to_string(h);
    ASSERT_EQ(got.size(), std::size_t(n)) << tag;
    ASSERT_EQ(got.grad2d.size(), std::size_t(n)) << tag;
    // Visibility comes from the radii, computed in double on the CPU and float on the GPU: a splat
    // exactly at a culling boundary may flip. Expected 0.
    std::size_t flips = 0, visible = 0;
    std::vector<float> got_grad2d = got.grad2d;
    for (int i = 0; i < n; ++i) {
      visible += want.count[i];
      if (got.count[i] != want.count[i]) {  // a flip is a whole norm on one side: compare the rest
        ++flips;
        got_grad2d[i] = want.grad2d[i] = 0.0f;
      }
    }
    std::cout << "[ adc ] " << tag << ": " << visible << " visible, " << flips
              << " visibility flips\n";
    EXPECT_LE(flips, std::size_t(2)) << tag;
    EXPECT_GT(visible, std::size_t(n / 2)) << tag;
    double max_want = 0;
    for (float x : want.grad2d) max_want = std::max(max_want, double(x));
    ASSERT_GT(max_want, 0.0) << tag;
    expect_agree(tag + " grad2d", got_grad2d, want.grad2d,
                 {1e-3, 0.99999, 1e-2 * max_want,
                  "norms of v_means2d: float atomics vs sorted CPU sums (ParityRasterize bound)"});

    // A step that does not accumulate leaves the statistics alone.
    u.s.accumulate_grad2d = false;
    gpu_b->step(u.scene.camera, 0, u.s);
    std::vector<StepResult> losses;
    gpu_b->collect_losses(losses, true);
    EXPECT_TRUE(bit_equal(cuda::adc_stats(*gpu_b).grad2d, got.grad2d)) << tag;
  }
}

// AbsGS's statistic (StepPlan::accumulate_grad2d_abs): the rasterizer's per-pixel absolute sums on
// the GPU against the CPU's, with grad2d's tolerance; visibility flips are left out as there.
TEST(ParityAdc, AbsStatisticMatchesCpu) {
  for (const auto& [n, w, h] : {std::tuple{600, 97, 61}, std::tuple{3000, 160, 120}}) {
    StatsScene u = stats_scene(n, w, h);
    u.s.accumulate_grad2d_abs = true;
    const auto [cpu_b, gpu_b] = step_both(u);
    adc::Stats want = cpu::adc_stats(*cpu_b);
    adc::Stats got = cuda::adc_stats(*gpu_b);
    const std::string tag =
        std::to_string(n) + " splats " + std::to_string(w) + "x" + std::to_string(h);
    ASSERT_EQ(got.grad2d_abs.size(), std::size_t(n)) << tag;
    ASSERT_EQ(want.grad2d_abs.size(), std::size_t(n)) << tag;
    std::size_t flips = 0, above = 0, visible = 0;
    for (int i = 0; i < n; ++i) {
      if (got.count[i] != want.count[i]) {
        ++flips;
        got.grad2d_abs[i] = want.grad2d_abs[i] = 0.0f;
      }
      visible += want.count[i];
      above += want.grad2d_abs[i] > 1.01f * want.grad2d[i];
    }
    EXPECT_LE(flips, std::size_t(2)) << tag;
    EXPECT_GT(above, visible / 2) << tag << ": the statistic should differ from grad2d";
    double max_want = 0;
    for (float x : want.grad2d_abs) max_want = std::max(max_want, double(x));
    ASSERT_GT(max_want, 0.0) << tag;
    expect_agree(tag + " grad2d_abs", got.grad2d_abs, want.grad2d_abs,
                 {1e-3, 0.99999, 1e-2 * max_want,
                  "norms of absolute per-pixel sums: float atomics vs sorted CPU sums"});
  }
}

// The statistic's kernels change nothing else: the model, its moments and grad2d after a few
// steps are those of a run without it, bit for bit (backend.deterministic, the default), and two
// runs give the same statistic.
TEST(ParityAdc, AbsStatisticChangesNothingElse) {
  StatsScene u = stats_scene(3000, 160, 120);
  const auto run = [&](bool abs) {
    auto b = backend_of(BackendKind::Cuda);
    b->set_images({&u.target});
    b->set_state(u.st);
    u.s.accumulate_grad2d_abs = abs;
    std::vector<StepResult> losses;
    for (int i = 0; i < 3; ++i) b->step(u.scene.camera, 0, u.s);
    b->collect_losses(losses, true);
    return std::pair{b->state(), cuda::adc_stats(*b)};
  };
  const auto [off, off_stats] = run(false);
  const auto [on, on_stats] = run(true);
  const auto [again, again_stats] = run(true);
  EXPECT_TRUE(off_stats.grad2d_abs.empty());
  ASSERT_EQ(on_stats.grad2d_abs.size(), on.params.size());
  for (const auto& [g_on, g_off] : {std::pair{groups(on.params), groups(off.params)},
                                    std::pair{groups(on.adam_m), groups(off.adam_m)},
                                    std::pair{groups(on.adam_v), groups(off.adam_v)}})
    for (std::size_t k = 0; k < g_on.size(); ++k) EXPECT_TRUE(bit_equal(g_on[k], g_off[k])) << k;
  EXPECT_TRUE(bit_equal(on_stats.grad2d, off_stats.grad2d));
  EXPECT_EQ(on_stats.count, off_stats.count);
  EXPECT_TRUE(bit_equal(on_stats.grad2d_abs, again_stats.grad2d_abs));
}

// ---- Refine ticks against the CPU ---------------------------------------------------------------

struct Case {
  const char* name;
  int n;
  double transparent;  // fraction below prune_opacity
  double grow;         // fraction with a mean statistic above grow_grad2d
  double small, big;   // fractions at clone size and too big (the rest: split size)
  bool prune_big;
  std::uint32_t seed;
};

struct Start {
  TrainState st;
  adc::Stats stats;
};

// Adam moments poisoned with nonzero values (v positive), so a missed zeroing or a moment that
// does not move with its splat shows.
Start make_start(const Case& c) {
  Start s;
  s.st.params = random_scene(c.n, 64, 48, c.seed).gaussians;
  std::mt19937 rng(c.seed * 13 + 5);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  s.stats.reset(std::size_t(c.n));
  for (int i = 0; i < c.n; ++i) {
    if (u(rng) < c.transparent) s.st.params.raw_opacity[i] = logit(1e-4f + 0.0045f * u(rng));
    const float kind = u(rng);
    for (int k = 0; k < 3; ++k) {
      const float scale = kind < c.small           ? 0.002f + 0.007f * u(rng)
                          : kind < c.small + c.big ? 0.11f + 0.4f * u(rng)
                                                   : 0.012f + 0.08f * u(rng);
      s.st.params.log_scales[std::size_t(i) * 3 + k] = std::log(scale);
    }
    s.stats.count[i] = int(u(rng) * 6);
    const float f = u(rng) < c.grow ? 1.05f + 2.0f * u(rng) : 0.95f * u(rng);
    s.stats.grad2d[i] = float(s.stats.count[i]) * 0.0002f * f;
  }
  s.st.adam_m = s.st.adam_v = s.st.params;
  s.st.adam_m.for_each_group([&](const char*, std::vector<float>& v) {
    for (float& x : v) x = (u(rng) < 0.5f ? -1.0f : 1.0f) * (0.1f + u(rng));
  });
  s.st.adam_v.for_each_group([&](const char*, std::vector<float>& v) {
    for (float& x : v) x = 0.1f + u(rng);
  });
  s.st.adam_step = 42;
  return s;
}

// The first slot that holds a split child: kept originals and surviving clones come first.
std::size_t first_child(const Start& s, const AdcRefineSettings& rs) {
  const adc::Thresholds t = adc::thresholds(rs);
  std::size_t kept = 0, clones = 0;
  for (std::size_t i = 0; i < s.st.params.size(); ++i) {
    const adc::Decision d = adc::decide(s.stats.grad2d[i], s.stats.count[i],
                                        adc::max_log_scale(&s.st.params.log_scales[i * 3]),
                                        s.st.params.raw_opacity[i], t);
    kept += d.action != adc::Action::Split && !d.prune_self;
    clones += d.action == adc::Action::Clone && !d.prune_self;
  }
  return kept + clones;
}

void check_refine(Backend& gpu, const Case& c) {
  const Start start = make_start(c);
  AdcRefineSettings rs;
  rs.scene_extent = 1.0;
  rs.prune_big = c.prune_big;
  rs.seed = 0xadc0000ull + c.seed;

  TrainState cpu_st = start.st;
  adc::Stats cpu_stats = start.stats;
  const RefineStats want = cpu::adc_refine(cpu_st, cpu_stats, rs);

  gpu.set_state(start.st);
  cuda::set_adc_stats(gpu, start.stats);
  const double totals_before = sync_count(gpu, "adc_totals");
  const RefineStats got = gpu.refine(AdcTick(rs));
  const TrainState gpu_st = gpu.state();
  const std::string tag = c.name;
  std::cout << "[ adc ] " << tag << ": " << c.n << " splats, " << want.cloned << " cloned, "
            << want.split << " split, " << want.pruned << " pruned -> " << want.count << "\n";

  EXPECT_EQ(got.cloned, want.cloned) << tag;
  EXPECT_EQ(got.split, want.split) << tag;
  EXPECT_EQ(got.pruned, want.pruned) << tag;
  EXPECT_EQ(got.count, want.count) << tag;
  EXPECT_EQ(gpu.num_splats(), want.count) << tag;
  EXPECT_EQ(gpu_st.adam_step, start.st.adam_step) << tag;
  EXPECT_EQ(sync_count(gpu, "adc_totals"), totals_before + 1)
      << tag << ": one totals wait per tick";
  ASSERT_EQ(gpu_st.params.size(), cpu_st.params.size()) << tag;

  // Everything but the split children's means is a copy or one float subtraction: bit-identical,
  // which also proves the same decisions and the same compacted order.
  const std::size_t children_from = first_child(start, rs);
  EXPECT_TRUE(bit_equal(gpu_st.params.log_scales, cpu_st.params.log_scales))
      << tag << " log_scales";
  EXPECT_TRUE(bit_equal(gpu_st.params.quats, cpu_st.params.quats)) << tag << " quats";
  EXPECT_TRUE(bit_equal(gpu_st.params.raw_opacity, cpu_st.params.raw_opacity))
      << tag << " raw_opacity";
  EXPECT_TRUE(bit_equal(gpu_st.params.sh, cpu_st.params.sh)) << tag << " sh";
  // Adam state: survivors carry their poisoned moments to their new slots, new slots are zero.
  const char* names[5] = {"means", "log_scales", "quats", "raw_opacity", "sh"};
  const auto gm = groups(gpu_st.adam_m), cm = groups(cpu_st.adam_m);
  const auto gv = groups(gpu_st.adam_v), cv = groups(cpu_st.adam_v);
  for (int g = 0; g < 5; ++g) {
    EXPECT_TRUE(bit_equal(gm[g], cm[g])) << tag << " adam_m " << names[g];
    EXPECT_TRUE(bit_equal(gv[g], cv[g])) << tag << " adam_v " << names[g];
  }
  // Means: survivors and clones bit-identical; children within the device's logf/cosf/sqrtf ulps
  // on a draw times a scale (< 0.5) plus one float add.
  std::size_t child_means_off = 0, other_means_off = 0;
  float worst = 0;
  for (std::size_t e = 0; e < cpu_st.params.means.size(); ++e) {
    const float a = gpu_st.params.means[e], b = cpu_st.params.means[e];
    if (e / 3 < children_from) {
      other_means_off += std::memcmp(&a, &b, sizeof a) != 0;
    } else {
      const float err = std::abs(a - b);
      worst = std::max(worst, err);
      child_means_off += !(err <= 4e-6f + 2e-6f * std::abs(b));
    }
  }
  EXPECT_EQ(other_means_off, 0u) << tag << " means of kept splats and clones";
  EXPECT_EQ(child_means_off, 0u) << tag << " split children's means, worst difference " << worst;

  // Statistics restart at zero; the model's tails stay zero.
  const adc::Stats after = cuda::adc_stats(gpu);
  EXPECT_EQ(after.size(), want.count) << tag;
  EXPECT_TRUE(std::all_of(after.grad2d.begin(), after.grad2d.end(), [](float x) {
    return x == 0.0f;
  })) << tag;
  EXPECT_TRUE(std::all_of(after.count.begin(), after.count.end(), [](int x) { return x == 0; }))
      << tag;
  expect_zero_tails(gpu, want.count, tag);
}

TEST(ParityAdc, RefineTicksMatchCpu) {
  auto b = backend_of(BackendKind::Cuda);
  const Case cases[] = {
      {"mixed", 3000, 0.1, 0.4, 0.4, 0.05, false, 1},
      {"mixed, prune big", 3000, 0.1, 0.4, 0.4, 0.1, true, 2},
      {"clone only", 1000, 0.0, 0.5, 1.0, 0.0, false, 3},
      {"split only", 1500, 0.0, 0.6, 0.0, 0.0, false, 4},
      {"prune only", 2000, 0.5, 0.0, 0.3, 0.2, true, 5},
      {"nothing to do", 700, 0.0, 0.0, 0.5, 0.0, false, 6},
      {"everything pruned", 500, 1.0, 0.5, 0.5, 0.0, false, 7},
      {"almost everything splits (capacity growth)", 20000, 0.0, 0.97, 0.0, 0.0, false, 8},
      {"one splat, split", 1, 0.0, 1.0, 0.0, 0.0, false, 9},
      {"one splat, pruned", 1, 1.0, 0.0, 0.0, 0.0, false, 10},
  };
  for (const Case& c : cases) check_refine(*b, c);
  {  // No splats: nothing to do.
    TrainState st;
    for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) g->sh_degree = 3;
    b->set_state(st);
    const RefineStats r = b->refine(AdcTick(AdcRefineSettings{}));
    EXPECT_EQ(r.count + r.cloned + r.split + r.pruned, 0u);
    EXPECT_EQ(b->num_splats(), 0u);
  }
}

// ---- Opacity reset ------------------------------------------------------------------------------

TEST(ParityAdc, OpacityResetMatchesCpu) {
  const Start start = make_start({"reset", 2500, 0.2, 0.0, 0.3, 0.1, false, 21});
  auto b = backend_of(BackendKind::Cuda);
  b->set_state(start.st);
  b->refine(OpacityResetTick(0.01f));
  const TrainState got = b->state();
  TrainState want = start.st;
  cpu::adc_reset_opacity(want, 0.01f);
  EXPECT_TRUE(bit_equal(got.params.raw_opacity, want.params.raw_opacity));
  EXPECT_TRUE(bit_equal(got.adam_m.raw_opacity, want.adam_m.raw_opacity));
  EXPECT_TRUE(bit_equal(got.adam_v.raw_opacity, want.adam_v.raw_opacity));
  EXPECT_TRUE(bit_equal(got.params.means, start.st.params.means));
  EXPECT_TRUE(bit_equal(got.adam_m.sh, start.st.adam_m.sh));
  std::size_t clamped = 0;
  for (std::size_t i = 0; i < want.params.raw_opacity.size(); ++i)
    clamped += want.params.raw_opacity[i] != start.st.params.raw_opacity[i];
  EXPECT_GT(clamped, 1000u);  // the reset must matter, or the comparison proves nothing
}

// ---- Invariants over many steps and ticks -------------------------------------------------------

TEST(ParityAdc, InvariantsOverManyTicks) {
  auto b = backend_of(BackendKind::Cuda);
  const Scene scene = random_scene(600, 64, 48, 4242u);
  Image8 target(64, 48, 3);
  const auto noise = random_vector(target.data.size(), 12);
  for (std::size_t i = 0; i < noise.size(); ++i)
    target.data[i] = std::uint8_t(std::lround(127.5f + 127.5f * noise[i]));
  b->set_images({&target});
  b->set_state(make_start({"start", 600, 0.05, 0.0, 0.5, 0.0, false, 31}).st);

  StepSettings step;
  step.raster.sh_degree = 3;
  step.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};
  step.accumulate_grad2d = true;
  std::size_t prev_capacity = 0, grew = 0, shrank = 0;
  const double compact_before = sync_count(*b, "adc_compact");
  const int ticks = 30;
  for (int tick = 0; tick < ticks; ++tick) {
    const std::string tag = "tick " + std::to_string(tick);
    for (int k = 0; k < 3; ++k) b->step(scene.camera, 0, step);
    const std::size_t n = b->num_splats();
    // Thresholds from the model itself, so the count neither explodes nor dies: grow ticks grow
    // the top fifth of the visible splats by mean statistic, prune ticks remove the more
    // transparent half.
    const adc::Stats stats = cuda::adc_stats(*b);
    ASSERT_EQ(stats.size(), n) << tag;
    std::vector<float> means, opacities;
    for (std::size_t i = 0; i < n; ++i)
      if (stats.count[i] > 0) means.push_back(stats.grad2d[i] / float(stats.count[i]));
    for (float raw : b->state().params.raw_opacity) opacities.push_back(sigmoid(raw));
    auto quantile = [](std::vector<float> v, double q) {
      if (v.empty()) return 0.0f;
      std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(q * double(v.size() - 1)), v.end());
      return v[std::size_t(q * double(v.size() - 1))];
    };
    const bool prune_tick = tick % 5 == 4 || n > 5000;
    AdcRefineSettings rs;
    rs.grow_grad2d = prune_tick ? 1e30f : quantile(means, 0.8);
    rs.prune_opacity = prune_tick ? quantile(opacities, 0.5) : 0.005f;
    rs.prune_big = tick > 10;
    rs.scene_extent = 2.0;
    rs.seed = 500 + std::uint64_t(tick);
    const RefineStats r = b->refine(AdcTick(rs));
    EXPECT_EQ(r.count, n + r.cloned + r.split - r.pruned) << tag;
    EXPECT_EQ(b->num_splats(), r.count) << tag;
    grew += r.count > n;
    shrank += r.count < n;
    if (tick % 7 == 3) b->refine(OpacityResetTick(0.01f));

    const TrainState after = b->state();
    ASSERT_EQ(after.params.size(), r.count) << tag;
    for (const Gaussians* g : {&after.params, &after.adam_m, &after.adam_v})
      g->for_each_group([&](const char* name, const std::vector<float>& v) {
        const auto bad =
            std::find_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); });
        EXPECT_TRUE(bad == v.end()) << tag << " non-finite " << name << " at " << (bad - v.begin());
      });
    expect_zero_tails(*b, r.count, tag);
    const std::vector<cuda::DeviceArrayView> arrays = cuda::model_arrays(*b);
    EXPECT_GE(arrays[0].capacity, prev_capacity) << tag << " capacity shrank";
    prev_capacity = arrays[0].capacity;
    if (r.count == 0) break;
  }
  EXPECT_GT(grew, 5u);
  EXPECT_GT(shrank, 2u);
  EXPECT_GE(sync_count(*b, "adc_compact") - compact_before, 20.0);
}

}  // namespace
}  // namespace splat::test
