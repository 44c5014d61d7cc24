#include "strategy/mcmc/mcmc_strategy.h"

#include <algorithm>
#include <cmath>

#include "engine/mcmc.h"

namespace splat {

namespace {

// Regularizers (scaled by the subject's share of the pixels) and noise every step; refine ticks
// grow the count by `growth` up to cap_max. With mcmc_grad_power, the steps before refine_stop
// gather ADC's statistics, which weigh the draws.
class McmcDensifier final : public Densifier {
 public:
  McmcDensifier(const DensifyConfig& c, std::uint64_t seed, double coverage)
      : c_(c), seed_(seed), coverage_(coverage) {}

  void step_settings(std::int64_t step, StepSettings& s) const override {
    s.opacity_reg = c_.opacity_reg * coverage_;
    s.scale_reg = c_.scale_reg * coverage_;
    s.noise = c_.noise_lr > 0;
    s.noise_scale = s.lr.means * c_.noise_lr;
    s.noise_seed = mcmc::hash64(seed_, std::uint64_t(step), mcmc::kNoise);
    s.accumulate_grad2d = c_.mcmc_grad_power > 0 && step + 1 < c_.refine_stop;
  }

  std::optional<RefineStats> after_step(std::int64_t completed, Backend& b) override {
    if (!is_tick(completed)) return std::nullopt;
    McmcRefineSettings r;
    r.min_opacity = float(c_.min_opacity);
    r.target_count = grown(b.num_splats());
    r.seed = mcmc::hash64(seed_, std::uint64_t(completed), mcmc::kRelocate);
    r.max_count = std::size_t(c_.cap_max);
    r.grad_power = float(c_.mcmc_grad_power);
    return b.refine(McmcTick(r));
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
  double coverage_;  // StrategyContext::coverage
};

}  // namespace

std::unique_ptr<Densifier> make_mcmc_densifier(const StrategyContext& ctx) {
  return std::make_unique<McmcDensifier>(ctx.cfg, ctx.seed, ctx.coverage);
}

}  // namespace splat
