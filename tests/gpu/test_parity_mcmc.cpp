// MCMC densification on the GPU (cuda/mcmc_cuda.h, strategy/mcmc/) against the CPU reference
// (cpu/mcmc_cpu.h): the position noise, single refine ticks from the same state (relocation,
// growth, both, nearly everything dead, everything dead, one survivor, no splats), a training step
// with the MCMC terms on both backends (the regularizers go through Adam, cuda/adam_cuda.h), and
// invariants over many ticks (count, slots past the live count zero in every model array, finite
// values).
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
#include "cpu/mcmc_cpu.h"
#include "cuda/cuda_backend.h"
#include "cuda/mcmc_cuda.h"
#include "cuda/testing.h"
#include "engine/backend.h"
#include "parity_util.h"
#include "strategy/mcmc/mcmc_strategy.h"
#include "strategy/mcmc/mcmc_tick_cpu.h"
#include "train/backend_factory.h"
#include "train/config.h"

namespace splat::test {
namespace {

std::unique_ptr<Backend> cuda_backend() {
  BackendConfig cfg;
  cfg.type = BackendKind::Cuda;
  return make_backend(cfg);
}

std::vector<float> download(const cuda::DeviceBuffer<float>& b) {
  return b.download();
}

// ---- Position noise -----------------------------------------------------------------------------

TEST(ParityMcmc, NoiseMatchesCpu) {
  for (int n : {500, 3000}) {
    Gaussians g = random_scene(n, 64, 48, 20u + n).gaussians;
    // The gate (paper eq. 10) is ~0 above opacity ~0.05: give a third of the splats low opacities
    // across the gate's slope, and one a zero quaternion (skipped by both).
    std::mt19937 rng(7 + n);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int i = 0; i < n; i += 3) g.raw_opacity[i] = logit(0.0005f + 0.05f * u(rng));
    for (int k = 0; k < 4; ++k) g.quats[4 * 5 + k] = 0.0f;
    const float noise_scale = 50.0f;
    const std::uint64_t seed = 0x5eed0000ull + std::uint64_t(n);

    auto d_means = to_device(g.means), d_ls = to_device(g.log_scales), d_q = to_device(g.quats),
         d_raw = to_device(g.raw_opacity);
    const cuda::GaussianPtrs in{d_means.data(), d_ls.data(), d_q.data(), d_raw.data(), nullptr};
    cuda::mcmc_inject_noise(n, in, d_means.data(), {{noise_scale, seed}, nullptr, nullptr},
                            nullptr);
    SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = download(d_means);
    Gaussians want = g;
    cpu::inject_noise(want, noise_scale, seed);

    std::vector<float> d_got(got.size()), d_want(got.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      d_got[i] = got[i] - g.means[i], d_want[i] = want.means[i] - g.means[i];
    const std::string tag = std::to_string(n) + " splats";
    expect_agree(tag + " means", got, want.means,
                 {1e-6, 0.9999999, 1e-5, "same counter draws; CUDA logf/cosf/expf vs glibc, ulps"});
    expect_agree(
        tag + " displacement", d_got, d_want,
        {2e-5, 0.9999999, 1e-5, "same draws and gate; device math functions differ by ulps"});
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(got[3 * 5 + k], g.means[3 * 5 + k]) << tag << " zero quaternion moved";
    // The noise must be visible, or the comparison could not fail.
    EXPECT_GT(agreement(g.means, {want.means.begin(), want.means.end()}).rel_l2, 1e-3) << tag;
  }
}

// ---- Refine ticks against the CPU ---------------------------------------------------------------

constexpr float kMinOpacity = 0.005f;

// A state with `dead_fraction` of the splats (every one if 1) below kMinOpacity and Adam moments
// poisoned with nonzero values, so a missed zeroing and a stray write both show.
TrainState make_state(int n, double dead_fraction, std::uint32_t seed) {
  TrainState st;
  st.params = random_scene(n, 64, 48, seed).gaussians;
  std::mt19937 rng(seed * 7 + 1);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int i = 0; i < n; ++i)
    if (u(rng) < dead_fraction) st.params.raw_opacity[i] = logit(1e-5f + 0.0049f * u(rng));
  st.adam_m = st.params;
  st.adam_v = st.params;
  st.adam_m.for_each_group([&](const char*, std::vector<float>& v) {
    for (float& x : v) x = (u(rng) < 0.5f ? -1.0f : 1.0f) * (0.1f + u(rng));
  });
  st.adam_v.for_each_group([&](const char*, std::vector<float>& v) {
    for (float& x : v) x = 0.1f + u(rng);
  });
  st.adam_step = 42;
  return st;
}

std::size_t count_dead(const Gaussians& g) {
  std::size_t d = 0;
  for (float r : g.raw_opacity) d += sigmoid(r) <= kMinOpacity;
  return d;
}

// The floats of slot i across the five groups (means, log_scales, quats, raw_opacity, sh).
std::vector<float> slot(const Gaussians& g, std::size_t i) {
  std::vector<float> out;
  const std::size_t widths[5] = {3, 3, 4, 1, 3 * std::size_t(g.K())};
  int k = 0;
  g.for_each_group([&](const char*, const std::vector<float>& v) {
    const std::size_t w = widths[k++];
    out.insert(out.end(), v.begin() + i * w, v.begin() + (i + 1) * w);
  });
  return out;
}

bool all_zero(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; });
}
// One tick from `start` on both backends. Every slot the CPU left alone must be bit-identical on
// the GPU (parameters and poisoned moments); every slot the CPU touched (relocated, appended or
// corrected source: zero moments) must have exactly zero moments on the GPU, bit-identical copied
// groups (means, quats, sh) and the corrected raw_opacity / log_scales within device-math ulps.
void check_tick(Backend& gpu_backend,
                const TrainState& start,
                const McmcRefineSettings& s,
                const std::string& tag) {
  TrainState cpu = start;
  const RefineStats cs = cpu::mcmc_refine(cpu, s, start.adc);
  gpu_backend.set_state(start);
  const RefineStats gs = gpu_backend.refine(McmcTick(s));
  const TrainState gpu = gpu_backend.state();

  EXPECT_EQ(gs.dead, cs.dead) << tag;
  EXPECT_EQ(gs.added, cs.added) << tag;
  EXPECT_EQ(gs.count, cs.count) << tag;
  EXPECT_EQ(gpu_backend.num_splats(), cs.count) << tag;
  EXPECT_EQ(gpu.adam_step, start.adam_step) << tag;
  ASSERT_EQ(gpu.params.size(), cpu.params.size()) << tag;
  ASSERT_EQ(gpu.adam_m.size(), cpu.params.size()) << tag;
  ASSERT_EQ(gpu.adam_v.size(), cpu.params.size()) << tag;

  const std::size_t n0 = start.params.size();
  std::size_t touched = 0, mismatched = 0;
  std::string first;
  for (std::size_t i = 0; i < cpu.params.size(); ++i) {
    const auto cp = slot(cpu.params, i), gp = slot(gpu.params, i);
    const auto cm = slot(cpu.adam_m, i), cv = slot(cpu.adam_v, i);
    const auto gm = slot(gpu.adam_m, i), gv = slot(gpu.adam_v, i);
    bool ok;
    if (all_zero(cm) && all_zero(cv)) {
      ++touched;
      ok = all_zero(gm) && all_zero(gv);
      for (std::size_t k = 0; k < cp.size() && ok; ++k) {
        const bool corrected = (k >= 3 && k < 6) || k == 10;  // log_scales, raw_opacity
        // powf/logf of CUDA and glibc differ by a few ulps inside mcmc::relocate.
        ok =
            corrected ? std::abs(gp[k] - cp[k]) <= 2e-5f + 1e-5f * std::abs(cp[k]) : gp[k] == cp[k];
      }
    } else {
      ok = i < n0 && bit_equal(gp, cp) && bit_equal(gm, slot(start.adam_m, i)) &&
           bit_equal(gv, slot(start.adam_v, i));
    }
    if (!ok && mismatched++ == 0) first = std::to_string(i);
  }
  // The dead set: every slot dead at the start is rewritten (zero moments) whichever source it
  // took.
  if (cs.dead > 0) {
    std::size_t missed = 0;
    for (std::size_t i = 0; i < n0; ++i)
      if (sigmoid(start.params.raw_opacity[i]) <= s.min_opacity &&
          !(all_zero(slot(gpu.adam_m, i)) && all_zero(slot(gpu.adam_v, i))))
        ++missed;
    EXPECT_EQ(missed, 0u) << tag << ": dead slots the GPU did not relocate";
  }
  std::cout << "[ mcmc ] " << tag << ": " << touched << " touched slots, " << mismatched
            << " differ\n";
  // Expected 0. A draw whose u * total lands within rounding of a CDF boundary (double sums in
  // another order; growth weights after device-vs-glibc ulps in the corrections) may take the
  // neighbouring splat: that changes its own slot and the corrections of two sources.
  const std::size_t draws = cs.dead + cs.added;
  EXPECT_LE(mismatched, 3 * (1 + draws / 2000)) << tag << ", first differing slot " << first;
  if (draws > 0) {
    EXPECT_GT(touched, draws) << tag << " (copies plus at least one source)";
  }
}

TEST(ParityMcmc, RefineTicksMatchCpu) {
  auto b = cuda_backend();
  struct Case {
    const char* name;
    int n;
    double dead;
    std::size_t target;
    std::uint64_t seed;
  };
  const Case cases[] = {
      {"relocation only", 2000, 0.10, 0, 11},
      {"relocation, target below count", 1200, 0.05, 1000, 12},
      {"growth only", 1500, 0.0, 1800, 13},
      {"growth by one", 700, 0.0, 701, 14},
      {"relocation and growth", 3000, 0.05, 3300, 15},
      {"nearly everything dead", 1000, 0.9, 1000, 16},
      {"everything dead, growth", 500, 1.0, 600, 17},
      {"large growth", 800, 0.2, 3000, 18},
  };
  for (const Case& c : cases) {
    const TrainState st = make_state(c.n, c.dead, std::uint32_t(c.seed));
    if (c.dead == 0.0) {
      ASSERT_EQ(count_dead(st.params), 0u) << c.name;
    }
    check_tick(*b, st, {kMinOpacity, c.target, c.seed * 1000003}, c.name);
  }
  for (const float power : {1.0f, 0.5f, 2.0f}) {  // draws weighed by the gradient statistics
    TrainState st = make_state(2500, 0.08, 20);
    std::mt19937 rng(21);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    st.adc.reset(st.params.size());
    for (std::size_t i = 0; i < st.params.size(); ++i) {
      st.adc.count[i] = u(rng) < 0.1f ? 0 : 1 + int(8 * u(rng));  // some never seen
      st.adc.grad2d[i] = float(st.adc.count[i]) * 1e-4f * std::exp(4.0f * u(rng));
    }
    McmcRefineSettings s{kMinOpacity, 2800, 777};
    s.grad_power = power;
    check_tick(*b, st, s, "gradient power " + std::to_string(power));
  }
  {  // One survivor: every draw picks it, so its copy count passes mcmc::config::max_copies.
    TrainState st = make_state(300, 1.0, 19);
    st.params.raw_opacity[123] = logit(0.7f);
    check_tick(*b, st, {kMinOpacity, 300, 99}, "one survivor");
  }
  {  // No splats: nothing to do, whatever the target.
    TrainState st;
    for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) g->sh_degree = 3;
    b->set_state(st);
    const RefineStats r = b->refine(McmcTick(McmcRefineSettings{kMinOpacity, 10, 1}));
    EXPECT_EQ(r.dead + r.added + r.count, 0u);
    EXPECT_EQ(b->num_splats(), 0u);
  }
}

// ---- One training step with the MCMC terms on both backends -------------------------------------

TEST(ParityMcmc, TrainingStepWithMcmcTerms) {
  const int n = 600, w = 97, h = 61;
  const Scene scene = random_scene(n, w, h, 4321u);
  Image8 target(w, h, 3);
  const auto noise = random_vector(target.data.size(), 77);
  for (std::size_t i = 0; i < noise.size(); ++i)
    target.data[i] = std::uint8_t(std::lround(127.5f + 127.5f * noise[i]));

  TrainState st;
  st.params = scene.gaussians;
  // A quarter of the splats nearly transparent, where the noise gate opens.
  for (int i = 0; i < n; i += 4)
    st.params.raw_opacity[i] = logit(0.002f + 0.008f * float(i % 7) / 6.0f);
  st.adam_m = st.params;
  st.adam_v = st.params;
  const auto m0 = random_vector(st.params.sh.size() * 4, 6);
  int k = 0;
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group([&](const char*, std::vector<float>& v) {
      for (float& x : v)
        x = g == &st.adam_v ? 1e-4f * (0.5f + 0.5f * m0[k++ % m0.size()])
                            : 1e-3f * m0[k++ % m0.size()];
    });
  st.adam_step = 7;

  StepSettings s;
  s.raster.sh_degree = 3;
  s.raster.background = {1.0f, 1.0f, 1.0f};
  s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};
  s.opacity_reg = 100;  // large, so the terms move the update beyond the tolerances below
  s.scale_reg = 100;
  s.noise = true;
  s.noise_scale = 5;
  s.noise_seed = 2024;

  auto run = [&](Backend& b, const StepSettings& ss) {
    b.set_images({&target});
    b.set_state(st);
    b.step(scene.camera, 0, ss);
    std::vector<StepResult> losses;
    b.collect_losses(losses, true);
    return b.state();
  };
  BackendConfig cpu_cfg;
  cpu_cfg.type = BackendKind::Cpu;
  auto cpu_b = make_backend(cpu_cfg);
  auto gpu_b = cuda_backend();
  const TrainState cpu = run(*cpu_b, s), gpu = run(*gpu_b, s);
  StepSettings plain = s;
  plain.opacity_reg = plain.scale_reg = plain.noise_scale = 0;
  plain.noise = false;
  const TrainState cpu_plain = run(*cpu_b, plain);

  auto delta = [](const std::vector<float>& a, const std::vector<float>& start) {
    std::vector<float> d(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - start[i];
    return d;
  };
  const Tolerance tol{2e-2, 0.999, 1e-3,
                      "Adam on float gradients summed in another order (as ParityStep)"};
  const std::pair<const char*, std::vector<float> Gaussians::*> groups[] = {
      {"means", &Gaussians::means},
      {"log_scales", &Gaussians::log_scales},
      {"raw_opacity", &Gaussians::raw_opacity}};
  for (const auto& [name, field] : groups) {
    const auto want = delta(cpu.params.*field, st.params.*field);
    expect_agree(std::string("update ") + name, delta(gpu.params.*field, st.params.*field), want,
                 tol);
    // The MCMC terms must change this update by far more than the tolerance, or it proves nothing.
    const auto plain_d = delta(cpu_plain.params.*field, st.params.*field);
    EXPECT_GT(agreement(plain_d, {want.begin(), want.end()}).rel_l2, 5 * tol.rel_l2) << name;
  }
  expect_agree("adam_m raw_opacity", delta(gpu.adam_m.raw_opacity, st.adam_m.raw_opacity),
               delta(cpu.adam_m.raw_opacity, st.adam_m.raw_opacity),
               {1e-3, 0.99999, 1e-4, "first moment moves by (1-beta1) * gradient"});
}

// ---- Invariants over many ticks
// ------------------------------------------------------------------

TEST(ParityMcmc, InvariantsOverManyTicks) {
  auto b = cuda_backend();
  const Scene scene = random_scene(600, 64, 48, 555u);
  Image8 target(64, 48, 3);
  const auto noise = random_vector(target.data.size(), 8);
  for (std::size_t i = 0; i < noise.size(); ++i)
    target.data[i] = std::uint8_t(std::lround(127.5f + 127.5f * noise[i]));
  b->set_images({&target});
  b->set_state(make_state(600, 0.1, 555u));

  StepSettings step;
  step.raster.sh_degree = 3;
  step.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};
  step.opacity_reg = 0.01;
  step.scale_reg = 0.01;
  step.noise = true;
  step.noise_scale = 1e-3;

  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::size_t prev_capacity = 0;
  for (int tick = 0; tick < 40; ++tick) {
    const std::string tag = "tick " + std::to_string(tick);
    TrainState st = b->state();
    std::size_t n = st.params.size();
    ASSERT_EQ(n, b->num_splats()) << tag;
    // Shrink the live set: every third tick kill most splats (all of them once).
    if (tick % 3 == 1 || tick == 20) {
      const float kill = tick == 20 ? 1.0f : 0.6f + 0.3f * u(rng);
      for (float& r : st.params.raw_opacity)
        if (u(rng) < kill) r = -9.0f;
      b->set_state(st);
    }
    const std::size_t dead = count_dead(st.params);
    // Targets: +5 %, unchanged, +1, and twice far past the capacity.
    std::size_t target = n + n / 20;
    if (tick % 5 == 2) target = n;
    if (tick % 7 == 3) target = n + 1;
    if (tick == 12 || tick == 30) target = 4 * n;
    const RefineStats r =
        b->refine(McmcTick(McmcRefineSettings{kMinOpacity, target, 1000u + std::uint64_t(tick)}));
    EXPECT_EQ(r.dead, dead > 0 && dead < n ? dead : 0) << tag;
    EXPECT_EQ(r.added, target - n) << tag;
    EXPECT_EQ(r.count, target) << tag;
    n = target;
    if (tick % 4 == 0)
      b->step(scene.camera, 0, step);  // Adam, regularizers and noise on the grown arrays

    // state() drains the backend's stream, so the raw reads below see the finished tick.
    const TrainState after = b->state();
    ASSERT_EQ(after.params.size(), n) << tag;
    for (const Gaussians* g : {&after.params, &after.adam_m, &after.adam_v})
      g->for_each_group([&](const char* name, const std::vector<float>& v) {
        const auto bad =
            std::find_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); });
        EXPECT_TRUE(bad == v.end()) << tag << " non-finite " << name << " at " << (bad - v.begin());
      });
    expect_zero_tails(*b, n, tag);
    const std::vector<cuda::DeviceArrayView> arrays = cuda::model_arrays(*b);
    EXPECT_GE(arrays[0].capacity, prev_capacity) << tag << " capacity shrank";
    prev_capacity = arrays[0].capacity;
  }
  EXPECT_GT(b->num_splats(), 600u * 16);  // both overflows happened
  // One named host wait per tick besides the drain.
  double dead_count_syncs = 0;
  for (const auto& [name, value] : b->report())
    if (name == "sync.mcmc_dead_count") dead_count_syncs = value;
  EXPECT_EQ(dead_count_syncs, 40.0);
}

}  // namespace
}  // namespace splat::test
