#include "train/densify.h"

#include <algorithm>
#include <cmath>

#include "render/mcmc.h"

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
    s.noise_scale = s.lr.means * c_.noise_lr;
    s.noise_seed = mcmc::hash64(seed_, std::uint64_t(step), mcmc::kNoise);
  }

  std::optional<RefineStats> after_step(std::int64_t completed, Backend& b) override {
    if (completed <= c_.refine_start || completed >= c_.refine_stop || completed % c_.refine_every != 0)
      return std::nullopt;
    const std::size_t n = b.num_splats();
    McmcRefineSettings r;
    r.min_opacity = float(c_.min_opacity);
    r.target_count = std::max(n, std::min<std::size_t>(std::size_t(c_.cap_max),
                                                       std::size_t(std::floor(double(n) * (1.0 + c_.growth)))));
    r.seed = mcmc::hash64(seed_, std::uint64_t(completed), mcmc::kRelocate);
    return b.mcmc_refine(r);
  }

 private:
  DensifyConfig c_;
  std::uint64_t seed_;
};

}  // namespace

std::unique_ptr<Densifier> make_densifier(const Config& cfg) {
  switch (cfg.densify.strategy) {
    case DensifyStrategy::Mcmc:
      return std::make_unique<McmcDensifier>(cfg.densify, cfg.train.seed);
    case DensifyStrategy::None:
      break;
  }
  return std::make_unique<NoDensifier>();
}

}  // namespace splat
