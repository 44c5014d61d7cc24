#include "strategy/fastgs/fastgs_strategy.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "engine/mcmc.h"                // the counter RNG
#include "strategy/adc/adc_strategy.h"  // OpacityResetTick

namespace splat {

std::vector<int> sample_views(std::uint64_t seed, std::size_t n, std::size_t k) {
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  k = std::min(k, n);
  for (std::size_t i = 0; i < k; ++i) {
    const float u = mcmc::uniform01(seed, mcmc::kFastgsViews, i);
    const std::size_t j = i + std::min(n - i - 1, std::size_t(u * float(n - i)));
    std::swap(all[i], all[j]);
  }
  all.resize(k);
  return all;
}

namespace {

// FastGS's schedule (train.py): statistics and densify ticks before refine_stop, opacity resets
// every reset_every steps before it, final pruning every fastgs_final_every steps after it.
class FastgsDensifier final : public Densifier {
 public:
  FastgsDensifier(const DensifyConfig& c,
                  double scene_extent,
                  std::uint64_t seed,
                  const TrainingViews* views)
      : c_(c), extent_(scene_extent), seed_(seed), views_(views) {}

  void step_settings(std::int64_t step, StepSettings& s) const override {
    s.accumulate_grad2d = step + 1 < c_.refine_stop;
    s.accumulate_grad2d_abs = s.accumulate_grad2d;  // the split test's statistic (AbsGS)
  }

  std::optional<RefineStats> after_step(std::int64_t completed, Backend& b) override {
    std::optional<RefineStats> stats;
    const bool densifying = completed < c_.refine_stop;
    if (densifying && completed > c_.refine_start && completed % c_.refine_every == 0) {
      FastgsRefineSettings r;
      r.grow_grad2d = float(c_.grow_grad2d);
      r.grow_grad2d_abs = float(c_.grow_grad2d_abs);
      r.grow_scale3d = float(c_.grow_scale3d);
      r.min_importance = std::uint32_t(c_.fastgs_min_importance);
      r.prune_opacity = float(c_.prune_opacity);
      r.prune_scale3d = float(c_.prune_scale3d);
      r.prune_big = completed > c_.reset_every;  // FastGS: size_threshold from the first reset on
      r.opacity_cap = float(c_.fastgs_opacity_cap);
      r.scene_extent = extent_;
      r.seed = mcmc::hash64(seed_, std::uint64_t(completed), mcmc::kSplit);
      stats = b.refine(FastgsTick(views_at(completed), r));
    }
    // FastGS (as 3DGS) also resets at refine_start when the background is white.
    const bool reset = c_.reset_every > 0 && completed % c_.reset_every == 0;
    if (densifying && (reset || (completed == c_.refine_start && white_background(completed))))
      b.refine(OpacityResetTick(adc::config::reset_factor * float(c_.prune_opacity)));
    if (c_.fastgs_final_every > 0 && completed > c_.refine_stop &&
        completed < c_.fastgs_final_stop && completed % c_.fastgs_final_every == 0)
      stats = b.refine(FastgsFinalTick(views_at(completed), float(c_.fastgs_final_opacity),
                                       float(c_.fastgs_final_score)));
    return stats;
  }

 private:
  bool white_background(std::int64_t completed) const {
    if (!views_) return false;
    const std::array<float, 3> bg = views_->raster(completed - 1).background;
    return bg[0] == 1.0f && bg[1] == 1.0f && bg[2] == 1.0f;
  }

  // The views the tick after step `completed` scores, as that step rendered them.
  FastgsViews views_at(std::int64_t completed) const {
    if (!views_ || views_->count == 0)
      throw Error("densify.strategy = \"fastgs\": a tick needs the trainer's training views");
    FastgsViews v;
    const std::uint64_t seed = mcmc::hash64(seed_, std::uint64_t(completed), mcmc::kFastgsViews);
    v.images = sample_views(seed, views_->count, std::size_t(c_.fastgs_views));
    for (int i : v.images) v.cameras.push_back(&views_->camera(i));
    v.raster = views_->raster(completed - 1);
    v.factor = views_->factor();
    v.loss_thresh = float(c_.fastgs_loss_thresh);
    return v;
  }

  DensifyConfig c_;
  double extent_;
  std::uint64_t seed_;
  const TrainingViews* views_;
};

}  // namespace

std::unique_ptr<Densifier> make_fastgs_densifier(const StrategyContext& ctx) {
  return std::make_unique<FastgsDensifier>(ctx.cfg, ctx.scene_extent, ctx.seed, ctx.views);
}

}  // namespace splat
