#pragma once
// FastGS (Ren et al. 2025): multi-view consistent densification (VCD) and pruning (VCP), as its
// code fastgs/FastGS does it. ADC's statistics every step, and every refine_every steps a tick
// that first scores K sampled training views: it renders each, builds its error mask (pixels whose
// error, min-max normalized over the view, is above a threshold) and counts for every splat the
// masked pixels it blends (C) and those counts weighted by the view's loss (S). Splats with enough
// masked pixels per view grow as in ADC (clone on the screen-space gradient, split on the abs
// gradient), a drawn half of the pruning candidates goes, and opacities are capped; after
// refine_stop, final pruning ticks remove transparent splats and those of the highest scores.
// The ticks' CPU code is fastgs_tick_cpu.cpp, their CUDA code fastgs_tick_cuda.cpp; the shared
// math is fastgs.h.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/camera.h"
#include "engine/refine.h"
#include "engine/settings.h"
#include "strategy/fastgs/fastgs.h"
#include "strategy/strategy.h"

namespace splat {

// The views a tick scores: camera k renders training image images[k] (the refine context's
// order) with `raster`, at the resolution in use, downscaled by `factor` from full size.
struct FastgsViews {
  std::vector<const Camera*> cameras;
  std::vector<int> images;
  RasterSettings raster;
  int factor = 1;            // counts are scaled by factor^2 to full-resolution pixels
  float loss_thresh = 0.1f;  // the error mask's threshold on the normalized error
};

// The score pass's result per splat: C (masked pixels blended over the views, in full-resolution
// pixels) and S (those counts weighted by the views' losses).
struct FastgsScores {
  std::vector<std::uint32_t> count;
  std::vector<float> score;
};

// One densify tick (VCD, then the throttled prune and the opacity cap).
struct FastgsRefineSettings {
  float grow_grad2d = 0.0002f;      // clone: mean statistic at or above
  float grow_grad2d_abs = 0.0012f;  // split: mean abs statistic at or above
  float grow_scale3d = 0.001f;      // clone at or below this max scale (x extent), split above
  std::uint32_t min_importance = 5;
  float prune_opacity = 0.005f;  // pruning candidates below this opacity
  float prune_scale3d = 0.1f;    // with prune_big, pruning candidates above this scale
  bool prune_big = false;
  float opacity_cap = 0.8f;  // opacities clamped to this after the tick
  double scene_extent = 1.0;
  std::uint64_t seed = 0;  // counter RNG seed of the split samples and the prune's draw
};

namespace fastgs {
// The settings' thresholds in storage units, for `views` scored views.
inline Thresholds thresholds(const FastgsRefineSettings& s, std::uint32_t views) {
  Thresholds t;
  t.adc.grow_grad2d = s.grow_grad2d;
  t.adc.clone_log_scale = adc::log_threshold(double(s.grow_scale3d) * s.scene_extent);
  t.adc.prune_raw_opacity = adc::logit_threshold(double(s.prune_opacity));
  t.adc.prune_log_scale = adc::log_threshold(double(s.prune_scale3d) * s.scene_extent);
  t.adc.prune_big = s.prune_big;
  t.grow_grad2d_abs = s.grow_grad2d_abs;
  t.views = views;
  t.min_importance = s.min_importance;
  return t;
}
}  // namespace fastgs

// The densify tick: scores the views, decides on the model before the tick (fastgs::decide),
// grows (ADC's compaction and order: kept, clones, first children, second children), removes the
// pruning candidates among a draw of floor(candidates / 2) kept splats weighted by their pruning
// score (splats born in the tick are never drawn: the spec's fix of FastGS's misaligned weights),
// then caps every opacity at opacity_cap with zero opacity moments (ADC's opacity reset). Resets
// the statistics.
class FastgsTick final : public RefineTick {
 public:
  FastgsTick(FastgsViews v, const FastgsRefineSettings& s) : views(std::move(v)), settings(s) {}
  RefineStats run_cpu(cpu::RefineContext& ctx) override;
#if SPLAT_HAVE_CUDA
  RefineStats run_cuda(cuda::RefineContext& ctx) override;  // fastgs_tick_cuda.cpp
#endif
  FastgsViews views;
  FastgsRefineSettings settings;
};

// The final pruning tick (VCP): scores the views and removes every splat below min_opacity or with
// a pruning score above max_score. Survivors keep their Adam moments and statistics are reset.
class FastgsFinalTick final : public RefineTick {
 public:
  FastgsFinalTick(FastgsViews v, float min_opacity, float max_score)
      : views(std::move(v)), min_opacity(min_opacity), max_score(max_score) {}
  RefineStats run_cpu(cpu::RefineContext& ctx) override;
#if SPLAT_HAVE_CUDA
  RefineStats run_cuda(cuda::RefineContext& ctx) override;
#endif
  FastgsViews views;
  float min_opacity, max_score;
};

#if SPLAT_HAVE_CUDA
// Test hook (fastgs_tick_cuda.cpp): the CUDA score pass alone, with C and S downloaded.
FastgsScores fastgs_score_views_cuda(cuda::RefineContext& ctx, const FastgsViews& views);
#endif

// K of n training views without replacement from the counter RNG (a partial Fisher-Yates shuffle
// with draws mcmc::uniform01(seed, kFastgsViews, i)), K = min(k, n).
std::vector<int> sample_views(std::uint64_t seed, std::size_t n, std::size_t k);

std::unique_ptr<Densifier> make_fastgs_densifier(const StrategyContext& ctx);

}  // namespace splat
