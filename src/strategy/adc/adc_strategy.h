#pragma once
// 3DGS adaptive density control (Kerbl et al. 2023, sec. 5.2), as gsplat's DefaultStrategy:
// screen-space gradient statistics every step (StepPlan::accumulate_grad2d; the backends gather
// them), refine ticks that clone, split and prune, and periodic opacity resets. The ticks' CPU
// code is adc_tick_cpu.cpp (the specification), their CUDA code adc_tick_cuda.cpp with the kernels
// of adc_refine_cuda.cu; the shared math is engine/adc.h.
#include <cstdint>
#include <memory>

#include "engine/adc.h"
#include "engine/refine.h"
#include "strategy/strategy.h"

namespace splat {

// One ADC refine tick. Scales are max(exp(log_scales)) against the threshold times scene_extent.
struct AdcRefineSettings {
  float grow_grad2d = 0.0002f;   // mean statistic (see accumulate_grad2d) above: the splat grows
  float grow_scale3d = 0.01f;    // at or below this scale: cloned; above: split in two
  float prune_opacity = 0.005f;  // splats below this opacity are removed
  float prune_scale3d = 0.1f;    // with prune_big, splats above this scale are removed
  double scene_extent = 1.0;
  bool prune_big = false;  // gsplat: only after the first opacity reset
  std::uint64_t seed = 0;  // counter RNG seed of the split samples
};

namespace adc {
// The settings' thresholds in storage units (engine/adc.h), computed once on the host.
inline Thresholds thresholds(const AdcRefineSettings& s) {
  Thresholds t;
  t.grow_grad2d = s.grow_grad2d;
  t.clone_log_scale = log_threshold(double(s.grow_scale3d) * s.scene_extent);
  t.prune_raw_opacity = logit_threshold(double(s.prune_opacity));
  t.prune_log_scale = log_threshold(double(s.prune_scale3d) * s.scene_extent);
  t.prune_big = s.prune_big;
  return t;
}
}  // namespace adc

// The refine tick from the statistics accumulated since the last one, summed over the ranks
// (which it then resets): clones small splats and splits large ones whose mean statistic is
// high, then prunes the grown set. The result is compacted in gsplat's order: surviving unsplit
// originals, clones, first split children, second split children, each in source index order.
// Survivors keep their Adam moments; clones and children start from zero. Split children are
// drawn from the parent's Gaussian (adc::split_offset) with scales / 1.6 and the parent's
// opacity (3DGS; not the revised opacity of Bulo et al. 2024).
class AdcTick final : public RefineTick {
 public:
  explicit AdcTick(const AdcRefineSettings& s) : settings(s) {}
  RefineStats run_cpu(cpu::RefineContext& ctx) override;
#if SPLAT_HAVE_CUDA
  RefineStats run_cuda(cuda::RefineContext& ctx) override;
#endif
  AdcRefineSettings settings;
};

// The opacity reset: opacity = min(opacity, max_opacity) (as a clamp of the raw logit) for every
// splat, and zero Adam moments of the opacity group. The count stays.
class OpacityResetTick final : public RefineTick {
 public:
  explicit OpacityResetTick(float max) : max_opacity(max) {}
  RefineStats run_cpu(cpu::RefineContext& ctx) override;
#if SPLAT_HAVE_CUDA
  RefineStats run_cuda(cuda::RefineContext& ctx) override;
#endif
  float max_opacity;
};

std::unique_ptr<Densifier> make_adc_densifier(const StrategyContext& ctx);

}  // namespace splat
