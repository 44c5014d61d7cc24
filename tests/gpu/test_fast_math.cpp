// backend.fast_math's two variants of the rasterizer's math (rasterize_common.cuh), function by
// function on the device. test_parity_rasterize.cpp compares whole passes of both variants
// (AccurateMathIsAtLeastAsClose), test_parity_step.cpp a training step with fast_math off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <vector>

#include "cpu/rasterize_cpu.h"
#include "cuda/rasterize_cuda.h"
#include "engine/settings.h"

namespace splat {
namespace {

// The two variants of the functions backend.fast_math switches (rasterize_common.cuh), on the
// device over the rasterizer's ranges: exp(power) for power in [log(alpha_min), 0] and 1 / (1 - a)
// for a in [alpha_min, alpha_max]. The accurate exp is expf, within 2 ulp of the exact value (CUDA
// programming guide), and the accurate reciprocal is correctly rounded: the bits of 1.0f / x. The
// fast ones are within a few ulp, and differ from the accurate ones.
TEST(RasterizeFastMath, AccurateFunctionsAreAccurate) {
  constexpr int kSamples = 200001;
  std::vector<float> powers(kSamples), denominators(kSamples);
  for (int i = 0; i < kSamples; ++i) {
    const float t = float(i) / float(kSamples - 1);
    powers[i] = float(cpu::kMinPower) * t;
    denominators[i] = 1.0f - (config::alpha_min + (config::alpha_max - config::alpha_min) * t);
  }
  const cuda::MathTestResult accurate = cuda::math_test(powers, denominators, false);
  const cuda::MathTestResult fast = cuda::math_test(powers, denominators, true);
  ASSERT_EQ(accurate.falloff.size(), std::size_t(kSamples));
  ASSERT_EQ(fast.reciprocal.size(), std::size_t(kSamples));
  // Distance in ulps between two positive finite floats (their bit patterns are ordered).
  const auto ulps = [](float a, float b) {
    std::int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return std::abs(std::int64_t(ia) - std::int64_t(ib));
  };
  std::int64_t exp_accurate = 0, exp_fast = 0, rcp_fast = 0;
  std::size_t rcp_wrong = 0, exp_differ = 0;
  for (int i = 0; i < kSamples; ++i) {
    const float exp_want = float(std::exp(double(powers[i])));
    const float rcp_want = 1.0f / denominators[i];
    exp_accurate = std::max(exp_accurate, ulps(accurate.falloff[i], exp_want));
    exp_fast = std::max(exp_fast, ulps(fast.falloff[i], exp_want));
    rcp_fast = std::max(rcp_fast, ulps(fast.reciprocal[i], rcp_want));
    rcp_wrong += accurate.reciprocal[i] != rcp_want;
    exp_differ += accurate.falloff[i] != fast.falloff[i];
  }
  std::cout << "[ info     ] max ulps from the exact: exp accurate " << exp_accurate << ", fast "
            << exp_fast << "; reciprocal fast " << rcp_fast << "; " << exp_differ << " of "
            << kSamples << " exps differ between the variants\n";
  EXPECT_LE(exp_accurate, 2);
  EXPECT_EQ(rcp_wrong, 0u) << "accurate reciprocals that are not 1.0f / x";
  EXPECT_LE(exp_fast, 16);
  EXPECT_LE(rcp_fast, 2);
  EXPECT_GT(exp_differ, 0u) << "the fast and the accurate exp are the same function";
}

}  // namespace
}  // namespace splat
