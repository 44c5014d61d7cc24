#include "strategy/adc/adc_strategy.h"

#include "engine/mcmc.h"  // the counter RNG's seeds

namespace splat {

namespace {

// Everything stops at refine_stop (statistics, ticks and resets).
class AdcDensifier final : public Densifier {
 public:
  AdcDensifier(const DensifyConfig& c, double scene_extent, std::uint64_t seed)
      : c_(c), extent_(scene_extent), seed_(seed) {}

  // The step with index `step` completes as step + 1; its statistics feed ticks before refine_stop.
  void step_settings(std::int64_t step, StepSettings& s) const override {
    s.accumulate_grad2d = step + 1 < c_.refine_stop;
  }

  std::optional<RefineStats> after_step(std::int64_t completed, Backend& b) override {
    if (completed >= c_.refine_stop) return std::nullopt;
    std::optional<RefineStats> stats;
    if (completed > c_.refine_start && completed % c_.refine_every == 0) {
      AdcRefineSettings r;
      r.grow_grad2d = float(c_.grow_grad2d);
      r.grow_scale3d = float(c_.grow_scale3d);
      r.prune_opacity = float(c_.prune_opacity);
      r.prune_scale3d = float(c_.prune_scale3d);
      r.scene_extent = extent_;
      // Big splats are pruned only once an opacity reset has happened (gsplat: step > reset_every).
      r.prune_big = completed > c_.reset_every;
      r.seed = mcmc::hash64(seed_, std::uint64_t(completed), mcmc::kSplit);
      stats = b.refine(AdcTick(r));
    }
    // After the tick of the same step, as gsplat: the reset opacities are not pruned at once.
    if (c_.reset_every > 0 && completed % c_.reset_every == 0)
      b.refine(OpacityResetTick(adc::config::reset_factor * float(c_.prune_opacity)));
    return stats;
  }

 private:
  DensifyConfig c_;
  double extent_;
  std::uint64_t seed_;
};

}  // namespace

std::unique_ptr<Densifier> make_adc_densifier(const StrategyContext& ctx) {
  return std::make_unique<AdcDensifier>(ctx.cfg, ctx.scene_extent, ctx.seed);
}

}  // namespace splat
