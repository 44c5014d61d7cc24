#pragma once
// Conversions the compact model formats share: SH DC <-> color, logit <-> opacity, and the
// byte rounding of the published encoders.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/gaussians.h"
#include "core/math.h"

namespace splat {

// The degree-0 SH basis constant: color = 0.5 + kShC0 * dc.
inline constexpr double kShC0 = 0.28209479177387814;

inline double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// A byte that stands for a probability p = b / 255 back to a logit. 0 and 255 stand for
// everything within half a step of 0 and 1, whose logits are infinite, so they decode to the
// logit half a step inside.
inline float logit_of_byte(double b) {
  const double p = std::clamp(b / 255.0, 0.5 / 255.0, 254.5 / 255.0);
  return static_cast<float>(std::log(p / (1.0 - p)));
}

// Round half away from zero, then clamp to a byte (spz's toUint8).
inline std::uint8_t round_to_byte(double x) {
  return static_cast<std::uint8_t>(std::clamp(std::round(x), 0.0, 255.0));
}

// Round half to even, then clamp to a byte (a JavaScript Uint8ClampedArray store).
inline std::uint8_t clamped_byte(double x) {
  return static_cast<std::uint8_t>(std::nearbyint(std::clamp(x, 0.0, 255.0)));
}

// The unit quaternion (w, x, y, z) of splat i; a zero quaternion is the identity.
inline std::array<double, 4> unit_quat(const Gaussians& g, std::size_t i) {
  std::array<double, 4> q;
  double n2 = 0;
  for (int j = 0; j < 4; ++j) {
    q[j] = g.quats[i * 4 + j];
    n2 += q[j] * q[j];
  }
  if (!(n2 > 0)) return {1, 0, 0, 0};
  for (double& v : q) v /= std::sqrt(n2);
  return q;
}

// Throws naming the file, the splat and the field when a decoded value is not finite.
inline float finite_or_throw(const std::string& path, std::size_t i, const char* field, double v) {
  if (!std::isfinite(v))
    throw input_error(path, "splat " + std::to_string(i) + ", " + field, "not a finite number");
  return static_cast<float>(v);
}

}  // namespace splat
