// The one-launch CUDA Adam against cpu::adam_update in double: parameters, moments and the update
// itself over several steps, five model groups plus an empty one, the SH learning-rate split
// (DC vs higher bands), float4 and scalar paths, MCMC's regularizers added from the parameters,
// and gradients left as they were (read only).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpu/adam_cpu.h"
#include "cuda/adam_cuda.h"
#include "parity_util.h"

namespace splat::test {
namespace {

// One parameter group on both sides. `offset` shifts the device arrays by one float so the
// kernel's scalar (unaligned) path runs too.
struct Group {
  std::string name;
  std::size_t n = 0;
  double lr = 0, lr_rest = 0;
  int sh_K = 0;
  int offset = 0;
  cuda::AdamReg reg = cuda::AdamReg::None;
  double reg_coef = 0;
  std::vector<double> param, m, v;  // reference state
  cuda::DeviceBuffer<float> d_param, d_grad, d_m, d_v;

  float* dev(cuda::DeviceBuffer<float>& b) { return b.data() + offset; }
  void upload(cuda::DeviceBuffer<float>& b, const std::vector<float>& host) {
    b.resize(n + offset + 1);
    SPLAT_CUDA_CHECK(cudaMemset(b.data(), 0, b.bytes()));
    if (n)
      SPLAT_CUDA_CHECK(cudaMemcpy(dev(b), host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  std::vector<float> download(cuda::DeviceBuffer<float>& b) {
    std::vector<float> host(n);
    if (n)
      SPLAT_CUDA_CHECK(cudaMemcpy(host.data(), dev(b), n * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
  }
  double lr_of(std::size_t i) const { return sh_K > 0 && (i / 3) % sh_K != 0 ? lr_rest : lr; }
  // The regularizer's gradient at the device's parameter p, as cpu::add_regularizer_grads forms it.
  float reg_term(float p) const {
    if (reg == cuda::AdamReg::SigmoidSlope) {
      const double s = 1.0 / (1.0 + std::exp(-double(p)));
      return float(reg_coef * s * (1 - s));
    }
    return reg == cuda::AdamReg::Exp ? float(reg_coef * std::exp(double(p))) : 0.0f;
  }
};

std::vector<float> uniform(std::size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> out(n);
  for (float& x : out) x = u(rng);
  return out;
}

std::vector<double> to_double(const std::vector<float>& f) {
  return {f.begin(), f.end()};
}

// sh_K coefficients per channel (16 = degree 3); sh_offset 1 puts SH on the scalar path.
std::vector<Group> make_groups(
    std::size_t N, bool zero_moments, int sh_K, int sh_offset, std::mt19937& rng) {
  std::vector<Group> gs(6);
  // 3DGS learning rates; shN = sh0 / 20 so a swapped or missing split is far outside tolerance.
  gs[0].name = "means", gs[0].n = N * 3, gs[0].lr = 1.6e-4;
  gs[1].name = "log_scales", gs[1].n = N * 3, gs[1].lr = 5e-3;
  gs[2].name = "empty", gs[2].n = 0, gs[2].lr = 1.0;  // a zero-block group between others
  gs[3].name = "quats", gs[3].n = N * 4, gs[3].lr = 1e-3, gs[3].offset = 1;  // scalar path
  gs[4].name = "raw_opacity", gs[4].n = N, gs[4].lr = 5e-2;  // N odd: float4 body plus a tail
  gs[5].name = "sh", gs[5].n = N * sh_K * 3, gs[5].lr = 2.5e-3, gs[5].lr_rest = 2.5e-3 / 20,
  gs[5].sh_K = sh_K;
  gs[5].offset = sh_offset;
  for (Group& g : gs) {
    const auto p = uniform(g.n, -1.0f, 1.0f, rng);
    // Moments as after some training: |m| below sqrt(v), v positive.
    std::vector<float> m(g.n, 0.0f), v(g.n, 0.0f);
    if (!zero_moments) {
      v = uniform(g.n, 1e-6f, 1e-2f, rng);
      const auto r = uniform(g.n, -0.9f, 0.9f, rng);
      for (std::size_t i = 0; i < g.n; ++i) m[i] = r[i] * std::sqrt(v[i]);
    }
    g.param = to_double(p), g.m = to_double(m), g.v = to_double(v);
    g.upload(g.d_param, p);
    g.upload(g.d_m, m);
    g.upload(g.d_v, v);
    g.upload(g.d_grad, std::vector<float>(g.n, 0.0f));
  }
  return gs;
}

void check_group(Group& g,
                 const std::vector<float>& grad_given,
                 const std::vector<float>& param_before,
                 const std::vector<double>& ref_before,
                 long long step) {
  SCOPED_TRACE(g.name + " after step " + std::to_string(step));
  if (g.n == 0) return;
  const auto p = g.download(g.d_param), m = g.download(g.d_m), v = g.download(g.d_v),
             grad = g.download(g.d_grad);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < g.n; ++i)
    changed += std::bit_cast<std::uint32_t>(grad[i]) != std::bit_cast<std::uint32_t>(grad_given[i]);
  EXPECT_EQ(changed, 0u) << "Adam only reads the gradients (the next backward overwrites them)";

  const Tolerance state_tol{
      1e-6, 1.0 - 1e-10, 1e-5,
      "float32 update of float32 state, ~1e-7 relative per step over a few steps"};
  expect_agree("param", p, g.param, state_tol);
  expect_agree("m", m, g.m, state_tol);
  expect_agree("v", v, g.v,
               {1e-6, 1.0 - 1e-10, 1e-8, "v <= 1e-2 here; float32 rounding ~1e-7 relative"});

  // The update itself, per learning-rate class: param rounding (ulp(1) / 2 ~ 6e-8) against steps of
  // at least lr_rest ~ 1e-4 bounds the relative error near 1e-3; a wrong rate or bias correction
  // is off by a factor.
  for (int cls = 0; cls < (g.sh_K > 0 ? 2 : 1); ++cls) {
    std::vector<float> got;
    std::vector<double> want;
    for (std::size_t i = 0; i < g.n; ++i) {
      if (g.sh_K > 0 && ((i / 3) % g.sh_K != 0) != (cls == 1)) continue;
      got.push_back(float(double(p[i]) - double(param_before[i])));
      want.push_back(g.param[i] - ref_before[i]);
    }
    double scale = 0;
    for (double w : want) scale = std::max(scale, std::abs(w));
    expect_agree(std::string("update") + (g.sh_K > 0 ? (cls ? " (sh rest)" : " (sh DC)") : ""), got,
                 want,
                 {2e-3, 1.0 - 1e-5, 2e-2 * scale + 1e-7,
                  "param rounding ~6e-8 against updates >= 1e-5; a wrong rate is off by >= 2x"});
  }
}

void run_steps(std::size_t N,
               bool zero_moments,
               long long first_step,
               int steps,
               std::uint32_t seed,
               int sh_K = 16,
               int sh_offset = 0,
               bool regularize = false) {
  std::mt19937 rng(seed);
  std::vector<Group> gs = make_groups(N, zero_moments, sh_K, sh_offset, rng);
  if (regularize) {  // terms as large as the gradients, so a lost or doubled one shows
    gs[1].reg = cuda::AdamReg::Exp, gs[1].reg_coef = 0.5;           // log_scales
    gs[4].reg = cuda::AdamReg::SigmoidSlope, gs[4].reg_coef = 2.0;  // raw_opacity
  }
  cudaStream_t stream = nullptr;
  SPLAT_CUDA_CHECK(cudaStreamCreate(&stream));
  for (int s = 0; s < steps; ++s) {
    const long long step = first_step + s;
    std::vector<cuda::AdamGroup> dg;
    std::vector<std::vector<float>> before(gs.size()), grads(gs.size());
    std::vector<std::vector<double>> ref_before(gs.size());
    for (std::size_t k = 0; k < gs.size(); ++k) {
      Group& g = gs[k];
      auto grad = uniform(g.n, -1.0f, 1.0f, rng);
      for (std::size_t i = 0; i < g.n; i += 11)
        grad[i] = 0.0f;  // untouched elements still move by m
      grads[k] = grad;
      if (g.n)
        SPLAT_CUDA_CHECK(
            cudaMemcpy(g.dev(g.d_grad), grad.data(), g.n * sizeof(float), cudaMemcpyHostToDevice));
      before[k] = g.download(g.d_param);
      ref_before[k] = g.param;
      std::vector<float> seen = grad;  // the gradient the update sees: plus the regularizer's
      for (std::size_t i = 0; i < g.n; ++i) seen[i] += g.reg_term(before[k][i]);
      cpu::adam_update<double>(g.param, to_double(seen), g.m, g.v, step,
                               [&g](std::size_t i) { return g.lr_of(i); });
      cuda::AdamGroup a;
      a.param = g.dev(g.d_param), a.grad = g.dev(g.d_grad), a.m = g.dev(g.d_m), a.v = g.dev(g.d_v);
      a.n = g.n;
      a.lr = float(g.lr);
      a.sh_K = g.sh_K;
      a.lr_rest = float(g.lr_rest);
      a.reg = g.reg;
      a.reg_coef = g.reg_coef;
      dg.push_back(a);
    }
    cuda::adam_step(dg.data(), int(dg.size()), step, stream);
    SPLAT_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (std::size_t k = 0; k < gs.size(); ++k)
      check_group(gs[k], grads[k], before[k], ref_before[k], step);
    if (::testing::Test::HasFailure()) break;
  }
  cudaStreamDestroy(stream);
}

// From fresh moments: the first steps are where the bias correction matters most (10x on m).
TEST(ParityAdam, FreshMomentsFirstSteps) {
  run_steps(1237, true, 1, 4, 11);
}

// From trained moments, late in training (bias corrections near 1).
TEST(ParityAdam, TrainedMomentsLateSteps) {
  run_steps(2003, false, 5000, 3, 12);
}

// Sizes around the float4 and block boundaries.
TEST(ParityAdam, OddSizes) {
  for (std::size_t N : {1u, 2u, 3u, 85u, 86u, 341u}) {
    SCOPED_TRACE("N = " + std::to_string(N));
    run_steps(N, false, 3, 2, 100 + std::uint32_t(N));
  }
}

// The DC/rest split when a float4 straddles two splats (K * 3 not a multiple of 4: K = 1, 9) and
// on the scalar path (misaligned SH), where the per-thread walk over (coefficient, channel) wraps.
TEST(ParityAdam, ShSplitAcrossSplatBoundaries) {
  for (int K : {1, 4, 9, 16})
    for (int offset : {0, 1}) {
      SCOPED_TRACE("K = " + std::to_string(K) + ", offset " + std::to_string(offset));
      run_steps(173, false, 2, 2, 300 + std::uint32_t(K * 2 + offset), K, offset);
    }
}

// MCMC's L1 terms, added by the update from the parameters before it (float4 path for the log
// scales, float4 body and scalar tail for the opacities at N = 341). The terms are as large as the
// gradients, so the update checks fail for a lost, doubled or misplaced term.
TEST(ParityAdam, Regularizers) {
  for (bool fresh : {true, false}) {
    SCOPED_TRACE(fresh ? "fresh moments" : "trained moments");
    run_steps(341, fresh, fresh ? 1 : 900, 3, 500 + std::uint32_t(fresh), 16, 0, true);
  }
}

TEST(ParityAdam, RejectsBadArguments) {
  cuda::AdamGroup g[cuda::kMaxAdamGroups + 1];
  EXPECT_THROW(cuda::adam_step(g, cuda::kMaxAdamGroups + 1, 1, nullptr), Error);
  EXPECT_THROW(cuda::adam_step(g, 1, 0, nullptr), Error);
  g[0].n = 5;  // elements but null pointers
  EXPECT_THROW(cuda::adam_step(g, 1, 1, nullptr), Error);
  EXPECT_NO_THROW(cuda::adam_step(g, 0, 1, nullptr));
}

}  // namespace
}  // namespace splat::test
