#pragma once
// Adaptive density control, the densification of 3DGS (Kerbl et al. 2023, sec. 5.2), as gsplat's
// DefaultStrategy describes it: the math both backends share. Plain inline functions, callable
// from host code and from CUDA kernels, so the CPU reference and the GPU take the same decisions
// and draw the same split samples.
//
// Every decision compares a stored float against a threshold in the parameter's own storage
// units, computed once on the host (adc::thresholds, strategy/adc/adc_strategy.h): max log-scale
// against log(s * extent) instead of exp(max log-scale) against s * extent, raw opacity against
// logit(o) instead of sigmoid(raw) against o. The functions are monotone, so the decisions are
// those of gsplat up to rounding at the boundary, and both backends compare the very same floats:
// same decisions, bit for bit.
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/backend.h"
#include "engine/mcmc.h"  // SPLAT_HD, the counter RNG

namespace splat::adc {

namespace config {
// 3DGS: split children get the parent's scale / (0.8 * 2); log(1.6) as the nearest float, so a
// child's log-scale is one float subtraction, identical on every backend.
inline constexpr float log_split_shrink = 0.470003629245735553650937f;
inline constexpr int split_children = 2;
// Opacity reset (3DGS sec. 5.2): opacities are clamped to reset_factor * prune opacity (0.01).
inline constexpr float reset_factor = 2.0f;
}  // namespace config

// One step's statistic of a visible splat: the norm of its screen-space mean gradient with the
// pixel axes scaled to [-1, 1] NDC (gsplat: grad * (width / 2, height / 2)), so the threshold does
// not depend on the image size. half_width = 0.5 * width, exact in float.
SPLAT_HD inline float grad2d_norm(float v_x, float v_y, float half_width, float half_height) {
  const float gx = mul_rn(v_x, half_width), gy = mul_rn(v_y, half_height);
  return sqrtf(add_rn(mul_rn(gx, gx), mul_rn(gy, gy)));
}

// The radii test of project_bwd: a culled splat has both radii 0.
SPLAT_HD inline bool visible(const int* radii) {  // [2]
  return radii[0] > 0 || radii[1] > 0;
}

// Thresholds in storage units (see the top of the file), built on the host.
struct Thresholds {
  float grow_grad2d;        // mean statistic above this grows the splat
  float clone_log_scale;    // max log-scale at or below: clone; above: split
  float prune_raw_opacity;  // raw opacity below this is pruned
  float prune_log_scale;    // max log-scale above this is pruned when prune_big
  bool prune_big;
};

// logit(p) in double, rounded to float; p <= 0 gives -inf (nothing is below), p >= 1 +inf.
inline float logit_threshold(double p) {
  if (!(p > 0)) return -INFINITY;
  if (!(p < 1)) return INFINITY;
  return float(std::log(p / (1.0 - p)));
}
inline float log_threshold(double x) {
  return x > 0 ? float(std::log(x)) : -INFINITY;
}

// max of three with the same NaN behaviour on host and device (no fmaxf).
SPLAT_HD inline float max_log_scale(const float* log_scale) {  // [3]
  float m = log_scale[0];
  m = log_scale[1] > m ? log_scale[1] : m;
  return log_scale[2] > m ? log_scale[2] : m;
}

enum class Action : std::uint8_t { Keep, Clone, Split };

struct Decision {
  Action action;
  bool prune_self;      // the splat (and its clone, identical) is removed
  bool prune_children;  // its split children (same opacity, log-scales - log 1.6) are removed
};

// The pruning half of decide, on the grown set: whether the splat (and a clone of it) and whether
// its split children are transparent or, with prune_big, too big.
SPLAT_HD inline void decide_prune(float max_log_scale,
                                  float raw_opacity,
                                  const Thresholds& t,
                                  Decision& d) {
  const bool transparent = raw_opacity < t.prune_raw_opacity;
  d.prune_self = transparent || (t.prune_big && max_log_scale > t.prune_log_scale);
  // Float subtraction is monotone, so max(ls_k - c) is max(ls_k) - c: the children's own max.
  d.prune_children =
      transparent || (t.prune_big && max_log_scale - config::log_split_shrink > t.prune_log_scale);
}

// gsplat DefaultStrategy's _grow_gs then _prune_gs for one splat. Growth: mean statistic
// (sum / count, 0 when never visible) above grow_grad2d; small splats are cloned (under-
// reconstruction), large ones split (over-reconstruction). Pruning runs on the grown set, so a
// clone shares its source's fate and split children are judged at their reduced scale.
SPLAT_HD inline Decision decide(
    float grad2d, std::int32_t count, float max_log_scale, float raw_opacity, const Thresholds& t) {
  const float mean = count > 0 ? grad2d / float(count) : 0.0f;
  Decision d;
  d.action = !(mean > t.grow_grad2d)              ? Action::Keep
             : max_log_scale <= t.clone_log_scale ? Action::Clone
                                                  : Action::Split;
  decide_prune(max_log_scale, raw_opacity, t, d);
  return d;
}

// A split child's log-scale: the parent's scale / 1.6.
SPLAT_HD inline float child_log_scale(float log_scale) {
  return log_scale - config::log_split_shrink;
}

// exp rounded once from double: the correctly rounded expf of glibc on both backends (CUDA's
// expf may be an ulp off).
SPLAT_HD inline float exp_rn(float x) {
  return float(exp(double(x)));
}

// Offset of split child `child` of splat `splat` (its index before the tick) from the parent's
// mean: a sample of N(0, Sigma), Sigma = R S^2 R^T with the parent's own (unshrunk) scales, as
// 3DGS samples the new positions from the parent Gaussian. z ~ N(0, I) from
// mcmc::normal(seed, kSplit, 6 splat + 3 child + axis).
SPLAT_HD inline void split_offset(const float* log_scale,  // [3]
                                  const float* quat,       // [4] (w, x, y, z), unnormalized
                                  std::uint64_t seed,
                                  std::uint64_t splat,
                                  int child,
                                  float* out) {  // [3]
  float w = quat[0], x = quat[1], y = quat[2], z = quat[3];
  const float qn = sqrtf(w * w + x * x + y * y + z * z);
  if (qn > 0) {
    w /= qn, x /= qn, y /= qn, z /= qn;
  } else {  // degenerate rotation: the identity, as for a unit (1, 0, 0, 0)
    w = 1.0f, x = y = z = 0.0f;
  }
  const float R[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                         {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                         {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
  float sz[3];
  const std::uint64_t base = 6 * splat + 3 * std::uint64_t(child);
  for (int k = 0; k < 3; ++k)
    sz[k] = exp_rn(log_scale[k]) * mcmc::normal(seed, mcmc::kSplit, base + k);
  for (int r = 0; r < 3; ++r) out[r] = R[r][0] * sz[0] + R[r][1] * sz[1] + R[r][2] * sz[2];
}

}  // namespace splat::adc
