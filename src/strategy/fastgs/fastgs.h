#pragma once
// FastGS's densification math (Ren et al. 2025, "FastGS"; its code fastgs/FastGS is the
// authority, read for /work/notes/fastgs_spec.md): plain inline functions that every backend's
// tick shares, as engine/adc.h is for ADC, so they take the same decisions from the same numbers.
// Thresholds are in storage units as in engine/adc.h (max log-scale against log(s * extent), raw
// opacity against logit(o)).
#include <cmath>
#include <cstdint>

#include "engine/adc.h"
#include "engine/mcmc.h"  // SPLAT_HD, the counter RNG

namespace splat::fastgs {

struct Thresholds {
  // grow_grad2d: the clone test on the mean statistic (at or above); clone_log_scale: the clone /
  // split boundary; the prune fields: which splats of the grown set are pruning candidates.
  adc::Thresholds adc;
  float grow_grad2d_abs;         // the split test on the mean abs statistic (at or above)
  std::uint32_t views;           // K, the views the score pass rendered
  std::uint32_t min_importance;  // growth needs importance = masked pixels / K above this
};

// A view's error-mask test on a pixel's error e (the mean over channels of |render - target|),
// against the view's smallest and largest error: the error normalized to [0, 1] above tau. A view
// whose errors are all equal has an empty mask (FastGS divides by zero there).
SPLAT_HD inline bool in_error_mask(float e, float lo, float hi, float tau) {
  return hi > lo && (e - lo) / (hi - lo) > tau;
}

// Min-max normalization of a score to [0, 1]; 0 when all scores are equal.
SPLAT_HD inline float normalized(float s, float lo, float hi) {
  return hi > lo ? (s - lo) / (hi - lo) : 0.0f;
}

// One splat's growth decision and pruning candidacy (FastGS's densify_and_prune_fastgs, on the
// model before the tick). Growth needs importance floor(score_count / K) above min_importance
// (the multi-view consistency gate); then a small splat (max log-scale at or below the boundary)
// is cloned when its mean statistic grad2d / count is at or above grow_grad2d, a large one split
// when its mean abs statistic is at or above grow_grad2d_abs. prune_self / prune_children say
// whether the splat (and its clone) and its split children are pruning candidates on the grown
// set, adc::decide_prune's test; FastGS removes only a drawn share of the candidates.
SPLAT_HD inline adc::Decision decide(float grad2d,
                                     float grad2d_abs,
                                     std::int32_t count,
                                     std::uint32_t score_count,
                                     float max_log_scale,
                                     float raw_opacity,
                                     const Thresholds& t) {
  const float mean = count > 0 ? grad2d / float(count) : 0.0f;
  const float mean_abs = count > 0 ? grad2d_abs / float(count) : 0.0f;
  const bool important = score_count / t.views > t.min_importance;
  const bool small = max_log_scale <= t.adc.clone_log_scale;
  adc::Decision d;
  d.action = important && small && mean >= t.adc.grow_grad2d        ? adc::Action::Clone
             : important && !small && mean_abs >= t.grow_grad2d_abs ? adc::Action::Split
                                                                    : adc::Action::Keep;
  adc::decide_prune(max_log_scale, raw_opacity, t.adc, d);
  return d;
}

// The throttled prune's draw: FastGS draws its candidates' removal without replacement with weight
// 1 / (1e-6 + 1 - ps) (ps: the splat's pruning score). Efraimidis-Spirakis: every splat gets the
// key log(u) / w with u uniform from the counter RNG (stream kFastgsPrune), and the draw is the
// splats of the largest keys. Weight 0 (a splat born in the tick) gives -inf: never drawn.
SPLAT_HD inline float prune_key(std::uint64_t seed,
                                std::uint64_t splat,
                                float score,
                                bool eligible) {
  if (!eligible) return -INFINITY;
  const float w = 1.0f / (1e-6f + (1.0f - score));
  return logf(mcmc::uniform01(seed, mcmc::kFastgsPrune, splat)) / w;
}

}  // namespace splat::fastgs
