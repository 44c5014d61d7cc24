#include "train/densify.h"

#include <algorithm>
#include <cmath>

#include "engine/adc.h"
#include "engine/mcmc.h"

namespace splat {

namespace {

class NoDensifier final : public Densifier {
 public:
  void step_settings(std::int64_t, StepSettings&) const override {}
  std::optional<RefineStats> after_step(std::int64_t, Backend&) override { return std::nullopt; }
};

// 3DGS as MCMC (Kheradmand et al. 2024): L1 regularizers on opacity and scale, position noise
// every step, and refine ticks that relocate dead splats and grow the count by `growth` up to
// cap_max.
class McmcDensifier final : public Densifier {
 public:
  McmcDensifier(const DensifyConfig& c, std::uint64_t seed) : c_(c), seed_(seed) {}

  void step_settings(std::int64_t step, StepSettings& s) const override {
    s.opacity_reg = c_.opacity_reg;
    s.scale_reg = c_.scale_reg;
    s.noise = c_.noise_lr > 0;
    s.noise_scale = s.lr.means * c_.noise_lr;
    s.noise_seed = mcmc::hash64(seed_, std::uint64_t(step), mcmc::kNoise);
  }

  std::optional<RefineStats> after_step(std::int64_t completed, Backend& b) override {
    if (!is_tick(completed)) return std::nullopt;
    McmcRefineSettings r;
    r.min_opacity = float(c_.min_opacity);
    r.target_count = grown(b.num_splats());
    r.seed = mcmc::hash64(seed_, std::uint64_t(completed), mcmc::kRelocate);
    r.max_count = std::size_t(c_.cap_max);
    return b.mcmc_refine(r);
  }

  // Relocation keeps the count, growth is deterministic: the counts are known ahead.
  std::vector<std::pair<std::int64_t, std::size_t>> projected_counts(std::int64_t completed,
                                                                     std::int64_t total,
                                                                     std::size_t n) const override {
    std::vector<std::pair<std::int64_t, std::size_t>> out;
    const std::int64_t every = c_.refine_every;
    for (std::int64_t t = (completed / every + 1) * every; t <= total && t < c_.refine_stop;
         t += every) {
      if (!is_tick(t)) continue;
      if (grown(n) == n) break;  // at the cap
      n = grown(n);
      out.emplace_back(t, n);
    }
    return out;
  }

 private:
  bool is_tick(std::int64_t completed) const {
    return completed > c_.refine_start && completed < c_.refine_stop &&
           completed % c_.refine_every == 0;
  }
  std::size_t grown(std::size_t n) const {
    return std::max(n,
                    std::min<std::size_t>(std::size_t(c_.cap_max),
                                          std::size_t(std::floor(double(n) * (1.0 + c_.growth)))));
  }

  DensifyConfig c_;
  std::uint64_t seed_;
};

// 3DGS adaptive density control (Kerbl et al. 2023, sec. 5.2), as gsplat's DefaultStrategy:
// screen-space gradient statistics every step, refine ticks that clone, split and prune, and
// periodic opacity resets. Everything stops at refine_stop (statistics, ticks and resets).
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
      stats = b.adc_refine(r);
    }
    // After the tick of the same step, as gsplat: the reset opacities are not pruned at once.
    if (c_.reset_every > 0 && completed % c_.reset_every == 0)
      b.adc_reset_opacity(adc::config::reset_factor * float(c_.prune_opacity));
    return stats;
  }

 private:
  DensifyConfig c_;
  double extent_;
  std::uint64_t seed_;
};

}  // namespace

std::unique_ptr<Densifier> make_densifier(const Config& cfg, double scene_extent) {
  switch (cfg.densify.strategy) {
    case DensifyStrategy::Mcmc:
      return std::make_unique<McmcDensifier>(cfg.densify, cfg.train.seed);
    case DensifyStrategy::Adc:
      return std::make_unique<AdcDensifier>(cfg.densify, scene_extent, cfg.train.seed);
    case DensifyStrategy::None:
      break;
  }
  return std::make_unique<NoDensifier>();
}

}  // namespace splat
