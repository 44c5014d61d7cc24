#pragma once
// 3DGS as Markov Chain Monte Carlo (Kheradmand et al. 2024): the math both backends share.
// Plain inline functions, callable from host code and from CUDA kernels, so the CPU reference and
// the GPU compute the same relocation and draw the same random numbers.
#include <cmath>
#include <cstdint>

#include "engine/hd.h"

namespace splat::mcmc {

namespace config {
inline constexpr int max_copies = 51;           // relocation ratio cap (binomial table size)
inline constexpr float noise_gate_k = 100.0f;   // op_sigmoid steepness
inline constexpr float noise_gate_x0 = 0.995f;  // op_sigmoid midpoint on 1 - opacity
}  // namespace config

// Counter-based random numbers (a splitmix64 finalizer over (seed, stream, index)): the same
// draw for the same counters on any backend and in any thread order.
SPLAT_HD inline std::uint64_t hash64(std::uint64_t seed,
                                     std::uint64_t stream,
                                     std::uint64_t index) {
  std::uint64_t z = seed ^ (stream * 0x9E3779B97F4A7C15ULL) ^ (index * 0xBF58476D1CE4E5B9ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
// Uniform in (0, 1), 24 bits: never 0, so log() is safe.
SPLAT_HD inline float uniform01(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return (float(hash64(seed, stream, index) >> 40) + 0.5f) * (1.0f / 16777216.0f);
}
// Standard normal by Box-Muller from two counter draws.
SPLAT_HD inline float normal(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const float u1 = uniform01(seed, stream, 2 * index), u2 = uniform01(seed, stream, 2 * index + 1);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795865f * u2);
}

// Streams of the counter RNG, one per use, so draws never collide.
// kSplit: ADC's split samples (engine/adc.h).
enum Stream : std::uint64_t {
  kNoise = 1,
  kRelocate = 2,
  kAdd = 3,
  kSplit = 4,
  kFastgsViews = 5,  // FastGS: the views a tick scores
  kFastgsPrune = 6,  // FastGS: the throttled prune's draw
};

// The weight by which relocation and growth draw a splat: its opacity o (the paper), or with
// power > 0 o times (its mean screen-space gradient since the last tick + kGradFloor)^power, the
// mean being grad2d_sum / count (ADC's statistics; no visible step: 0). The floor keeps splats no
// view saw drawable and, with no statistics at all, leaves the opacity weights. Double, the
// precision of the sampling CDF; powers 1 and 1/2 by correctly rounded operations (the same bits
// on the host and the device), others by pow.
inline constexpr double kGradFloor = 1e-8;
SPLAT_HD inline double sample_weight(double o, float grad2d_sum, std::int32_t count, float power) {
  if (power == 0.0f) return o;
  const double g = (count > 0 ? double(grad2d_sum) / double(count) : 0.0) + kGradFloor;
  return o * (power == 1.0f ? g : power == 0.5f ? sqrt(g) : pow(g, double(power)));
}

// Position noise gate (paper eq. 10): ~1 for nearly transparent splats, ~0 for opaque ones.
SPLAT_HD inline float noise_gate(float opacity) {
  return 1.0f / (1.0f + expf(-config::noise_gate_k * ((1.0f - opacity) - config::noise_gate_x0)));
}

// Opacity and scale of each of `copies` splats that replace one splat of opacity o so the
// rendered distribution is preserved (paper eq. 9):
//   o' = 1 - (1 - o)^(1/N),
//   s' = s * o / sum_{i=1..N} sum_{k=0..i-1} C(i-1, k) (-1)^k o'^(k+1) / sqrt(k+1).
struct Relocated {
  float opacity, scale_factor;
};
SPLAT_HD inline Relocated relocate(float o, int copies) {
  const int n = copies < 1 ? 1 : (copies > config::max_copies ? config::max_copies : copies);
  const float o_new = 1.0f - powf(1.0f - o, 1.0f / float(n));
  float denom = 0.0f;
  for (int i = 1; i <= n; ++i) {
    float binom = 1.0f;   // C(i-1, k), built up along k
    float o_pow = o_new;  // o'^(k+1)
    for (int k = 0; k < i; ++k) {
      denom += binom * ((k & 1) ? -1.0f : 1.0f) * o_pow / sqrtf(float(k + 1));
      binom = binom * float(i - 1 - k) / float(k + 1);
      o_pow *= o_new;
    }
  }
  return {o_new, o / denom};
}

}  // namespace splat::mcmc
