#pragma once
// Densification strategies as a family (gsplat's strategy objects; a factory by name as in
// tiny-cuda-nn). A strategy is a Densifier, the host policy around the training step: the per-step
// settings it needs before each step, and refine ticks after it that it hands to the backend
// (Backend::refine with a RefineTick, engine/refine.h). The backends know no strategy: each tick
// brings its own CPU code and, where it has one, its CUDA code.
//
// Adding a strategy: a folder src/strategy/<name>/ with its Densifier, its tick (a RefineTick
// with run_cpu, the specification, and run_cuda in a <name>_tick_cuda.cpp that CMake builds only
// with CUDA) and a factory, plus one line in strategy.cpp's registry. Code outside the library can
// register one too (register_strategy), as tests/test_strategy.cpp does.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/backend.h"

namespace splat {

// The [densify] section of the configuration (train/config.h): the strategy's name and the
// settings of each strategy.
struct DensifyConfig {
  std::string strategy = "mcmc";  // a registered name (strategy_names)
  // Refine ticks every refine_every steps in (refine_start, refine_stop). refine_stop is MCMC's
  // 25000; ADC's usual is 15000 (3DGS, gsplat), which an ADC config sets.
  std::int64_t refine_every = 100;
  std::int64_t refine_start = 500;
  std::int64_t refine_stop = 25000;
  // MCMC (Kheradmand et al. 2024), the paper's defaults.
  double min_opacity = 0.005;  // at or below: dead, relocated
  std::int64_t cap_max = 0;    // 0 = auto: from the training pixels (auto_config.h)
  double growth = 0.05;        // splats added per tick, as a fraction of the count
  double noise_lr = 5e5;       // position noise scale, times the means learning rate
  double opacity_reg = 0.01;
  double scale_reg = 0.01;
  // Relocation and growth draw splats by opacity (the paper: 0) or by opacity times the splat's
  // mean screen-space gradient since the last tick to this power (where the views are least fit).
  double mcmc_grad_power = 0.0;
  // ADC (3DGS adaptive density control), gsplat DefaultStrategy's defaults. Scales are relative
  // to the scene extent.
  double grow_grad2d = 0.0002;      // mean screen-space gradient above: clone or split
  double grow_scale3d = 0.01;       // clone at or below this max scale, split above
  double prune_opacity = 0.005;     // splats below are removed
  double prune_scale3d = 0.1;       // after the first opacity reset, splats above are removed
  std::int64_t reset_every = 3000;  // opacities clamped to 2 * prune_opacity; 0 = never
  // FastGS (Ren et al. 2025, multi-view consistent densification and pruning; strategy/fastgs/)
  // also uses refine_*, reset_every, grow_grad2d (its clone test), grow_scale3d (its clone / split
  // boundary), prune_opacity and prune_scale3d; configs/fastgs.toml sets FastGS's values for them.
  double grow_grad2d_abs = 0.0012;  // split test on the mean abs (AbsGS) statistic, at or above
  std::int64_t fastgs_views = 10;   // training views each tick scores (at most the training views)
  double fastgs_loss_thresh = 0.1;  // a pixel is in a view's error mask above this normalized error
  std::int64_t fastgs_min_importance =
      5;                            // growth needs (masked pixels covered / views) above this
  double fastgs_opacity_cap = 0.8;  // opacities clamped to this after every densify tick
  std::int64_t fastgs_final_every =
      3000;  // final pruning ticks every n steps after refine_stop (0 = none)
  std::int64_t fastgs_final_stop = 30000;  // ... before this step
  double fastgs_final_opacity = 0.1;       // final pruning: splats below this opacity are removed
  double fastgs_final_score = 0.9;  // final pruning: splats above this pruning score are removed
};

class Densifier {
 public:
  virtual ~Densifier() = default;
  // Adds what the strategy needs inside step `step` (0-based) to its settings.
  virtual void step_settings(std::int64_t step, StepSettings& s) const = 0;
  // Called after `completed` steps; refines the backend's model on a tick and says what changed.
  virtual std::optional<RefineStats> after_step(std::int64_t completed, Backend& backend) = 0;
  // The splat count expected after each later step up to `total`, from `count` after `completed`:
  // (step, count) where the count changes. Empty when it is not predictable (ADC) or constant.
  virtual std::vector<std::pair<std::int64_t, std::size_t>> projected_counts(
      std::int64_t completed, std::int64_t total, std::size_t count) const {
    return {};
  }
};

// What a strategy is made from. A strategy whose ticks render training views and score them
// (FastGS-style) renders in its tick's refine context (cpu/refine_cpu.h, cuda/refine_cuda.h: the
// training images and a render call); the training cameras it needs then join this context (the
// trainer has them per coarse-to-fine level: Trainer::camera).
struct TrainingViews {
  std::size_t count = 0;                          // training views (Backend::set_images order)
  std::function<const Camera&(int view)> camera;  // at the coarse-to-fine resolution in use
  std::function<int()> factor;                    // that resolution's downscale factor (1: full)
  std::function<RasterSettings(std::int64_t step)> raster;  // the raster settings of a step
};

struct StrategyContext {
  const DensifyConfig& cfg;
  std::uint64_t seed = 0;     // train.seed: the counter RNG seed of noise and ticks
  double scene_extent = 1.0;  // what ADC's scale thresholds are relative to
  // The share of the training pixels the subject covers (training_coverage; 1 for photographs).
  // MCMC's regularizers are weights against the photometric loss, a mean over every pixel: where
  // only part of each image is the subject (a cut-out object on a transparent background), the
  // loss's pull on each splat is that much weaker, and the regularizers are scaled alike.
  double coverage = 1.0;
  // The trainer's views, for a strategy whose ticks render them (FastGS); null where the
  // strategy is made only to project counts (a time budget's plan).
  const TrainingViews* views = nullptr;
};

using StrategyFactory = std::function<std::unique_ptr<Densifier>(const StrategyContext&)>;

// Adds a strategy under `name` for densify.strategy; splat::Error if the name is taken.
void register_strategy(std::string name, StrategyFactory make);
// The registered names: the built-in ones (none, mcmc, adc, fastgs), then the added ones in order.
std::vector<std::string_view> strategy_names();
// The strategy ctx.cfg.strategy names; splat::Error naming densify.strategy, a close registered
// name (did you mean) and the registered names.
std::unique_ptr<Densifier> make_densifier(const StrategyContext& ctx);
// The message for a name that is not registered, or nothing (the config's check of the key).
std::optional<std::string> unknown_strategy(std::string_view name);

}  // namespace splat
