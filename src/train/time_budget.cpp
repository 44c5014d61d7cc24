#include "train/time_budget.h"

#include <algorithm>
#include <cmath>

namespace splat {

Config compressed_recipe(const Config& recipe, double s) {
  auto times_s = [s](std::int64_t steps) {
    return std::max<std::int64_t>(1, std::llround(double(steps) * s));
  };
  Config c = recipe;
  c.train.iterations = times_s(recipe.train.iterations);
  c.train.sh_increase_every = times_s(recipe.train.sh_increase_every);
  c.densify.refine_start = times_s(recipe.densify.refine_start);
  c.densify.refine_stop = times_s(recipe.densify.refine_stop);
  if (recipe.densify.reset_every > 0) c.densify.reset_every = times_s(recipe.densify.reset_every);
  return c;
}

double plan_compression(const Config& recipe,
                        const StepCost& cost,
                        const CountProjection& project,
                        std::int64_t completed,
                        std::size_t splats,
                        double seconds) {
  auto predicted = [&](double s) {
    const Config c = compressed_recipe(recipe, s);
    return cost.remaining(completed, c.train.iterations, splats, project(c, completed, splats));
  };
  if (predicted(1.0) <= seconds) return 1.0;
  // The smallest s that still leaves one step, rounded up through compressed_recipe's rounding.
  double lo = std::min(1.0, (double(completed) + 1.0) / double(recipe.train.iterations));
  while (compressed_recipe(recipe, lo).train.iterations <= completed && lo < 1.0)
    lo = std::min(1.0, lo * 1.001 + 1e-9);
  if (predicted(lo) > seconds) return lo;
  double hi = 1.0;
  for (int i = 0; i < 50; ++i) {
    const double mid = 0.5 * (lo + hi);
    (predicted(mid) <= seconds ? lo : hi) = mid;
  }
  return lo;
}

TimeBudget::TimeBudget(const Config& recipe, double seconds, CountProjection project)
    : recipe_(recipe), seconds_(seconds), project_(std::move(project)) {}

std::optional<Config> TimeBudget::after_step(std::int64_t completed,
                                             std::size_t splats,
                                             double elapsed) {
  if (window_start_ < 0) {
    if (completed >= kWarmup) window_start_ = completed, window_elapsed_ = elapsed;
    return std::nullopt;
  }
  if (completed - window_start_ < kWindow) return std::nullopt;
  cost_.add(splats, (elapsed - window_elapsed_) / double(completed - window_start_));
  window_start_ = completed, window_elapsed_ = elapsed;
  // The first plan after two measurements; later ones at the quarters of the plan.
  const bool first = ++samples_ == 2;
  const bool due = !replan_at_.empty() && completed >= replan_at_.front();
  if (!first && !due) return std::nullopt;
  s_ = plan_compression(recipe_, cost_, project_, completed, splats,
                        (1.0 - kMargin) * (seconds_ - elapsed));
  Config planned = compressed_recipe(recipe_, s_);
  const std::int64_t total = planned.train.iterations;
  replan_at_.clear();
  for (std::int64_t quarter : {1, 2, 3})
    if (total * quarter / 4 > completed + kWindow) replan_at_.push_back(total * quarter / 4);
  return planned;
}

}  // namespace splat
