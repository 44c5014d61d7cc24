#pragma once
// Non-finite parameters: a diverged run or a damaged file shows as NaN or inf, and every later
// step, render and file inherits it. Found early, the error can say where it started.
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/gaussians.h"

namespace splat {

struct NonFinite {
  std::string group;  // "means", "log_scales", "quats", "raw_opacity" or "sh"
  std::size_t splat = 0;
  float value = 0;
  // "means of splat 12 is nan"
  std::string describe() const {
    return group + " of splat " + std::to_string(splat) + " is " + std::to_string(value);
  }
};

// The first non-finite value of g: the groups in for_each_group order, then by splat.
inline std::optional<NonFinite> find_non_finite(const Gaussians& g) {
  const auto widths = g.widths();
  std::optional<NonFinite> found;
  std::size_t group = 0;
  g.for_each_group([&](const char* name, const std::vector<float>& v) {
    const std::size_t width = widths[group++];
    if (found) return;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) {
        found = NonFinite{name, i / width, v[i]};
        return;
      }
    }
  });
  return found;
}

// Bounds of a model in training: beyond them a run has diverged although every value may still be
// finite (a learning rate far too large throws values to 1e30 in a step). The means stay within
// `reach` of the origin on every axis, the log-scales at most log(reach) (a splat larger than that
// sane world), every other value within kMaxParamMagnitude. A group has diverged when one value is
// NaN, inf or beyond kMaxParamMagnitude, or when more than 1 in kStrayShare of its values are
// beyond its range: a learning rate far too large moves them all, while MCMC's noise, which scales
// with a splat's covariance, may carry a few huge, nearly transparent splats (an SfM outlier's)
// that far between two refine ticks, harmlessly: they draw nothing there and are relocated.
inline constexpr float kMaxParamMagnitude = 1e18f;  // its square still fits a float
inline constexpr std::size_t kStrayShare = 100;
struct DivergenceLimits {
  float reach = kMaxParamMagnitude;
  // [lo, hi] of the values of a group (a for_each_group name, or "appearance").
  std::pair<float, float> range(std::string_view group) const {
    if (group == "means") return {-reach, reach};
    if (group == "log_scales") return {-kMaxParamMagnitude, std::log(reach)};
    return {-kMaxParamMagnitude, kMaxParamMagnitude};
  }
  static constexpr std::pair<float, float> hard{-kMaxParamMagnitude, kMaxParamMagnitude};
  // Whether a group of `size` values has diverged: `broken` of them outside `hard` (NaN and inf
  // included), `outside` outside its range.
  static bool diverged(std::size_t broken, std::size_t outside, std::size_t size) {
    return broken > 0 || outside * kStrayShare > size;
  }
};

inline bool within(float x, std::pair<float, float> range) {
  return std::isfinite(x) && x >= range.first && x <= range.second;
}

// Splats that render as nothing although every value is finite: a quaternion of length zero has
// no rotation (the projection skips it) and a scale above e^44 overflows its float covariance.
struct Undrawable {
  std::size_t zero_quats = 0, huge_scales = 0;
  std::size_t first_zero_quat = 0, first_huge_scale = 0;  // valid when the count is nonzero
  std::size_t count() const { return zero_quats + huge_scales; }
};
inline constexpr float kMaxLogScale = 44.0f;

inline Undrawable undrawable_splats(const Gaussians& g) {
  Undrawable u;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const float* q = &g.quats[i * 4];
    const float* s = &g.log_scales[i * 3];
    if (q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0) {
      if (u.zero_quats++ == 0) u.first_zero_quat = i;
    } else if (s[0] > kMaxLogScale || s[1] > kMaxLogScale || s[2] > kMaxLogScale) {
      if (u.huge_scales++ == 0) u.first_huge_scale = i;
    }
  }
  return u;
}

}  // namespace splat
