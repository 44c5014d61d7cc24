#include "train/time_budget.h"

#include <algorithm>
#include <cmath>

#include "train/resolution.h"

namespace splat {

Config compressed_recipe(const Config& recipe, double s) {
  auto times_s = [s](std::int64_t steps) {
    return std::max<std::int64_t>(1, std::llround(double(steps) * s));
  };
  Config c = recipe;
  c.train.iterations = times_s(recipe.train.iterations);
  c.train.sh_increase_every = times_s(recipe.train.sh_increase_every);
  if (recipe.train.coarse_until > 0) c.train.coarse_until = times_s(recipe.train.coarse_until);
  c.densify.refine_start = times_s(recipe.densify.refine_start);
  c.densify.refine_stop = times_s(recipe.densify.refine_stop);
  if (recipe.densify.reset_every > 0) c.densify.reset_every = times_s(recipe.densify.reset_every);
  if (recipe.densify.fastgs_final_every > 0)
    c.densify.fastgs_final_every = times_s(recipe.densify.fastgs_final_every);
  c.densify.fastgs_final_stop = times_s(recipe.densify.fastgs_final_stop);
  return c;
}

double plan_compression(const Config& recipe,
                        const StepCost& cost,
                        const CountProjection& project,
                        std::int64_t completed,
                        std::size_t splats,
                        double seconds,
                        int factor) {
  auto predicted = [&](double s) {
    const Config c = compressed_recipe(recipe, s);
    // The resolution never falls back (Trainer::train): the plan's factors below the one in use.
    const int now = std::min(factor, resolution_factor(c.train, completed));
    StepChanges factors = resolution_changes(c.train, completed, c.train.iterations);
    std::erase_if(factors, [&](const auto& change) { return int(change.second) >= now; });
    return cost.remaining(completed, c.train.iterations, splats, project(c, completed, splats), now,
                          factors);
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
                                             double elapsed,
                                             int factor) {
  // On a slow machine a window is a share of the budget rather than a number of steps.
  const double share = seconds_ / 50;
  // A window starts after the warm-up, and again where the resolution changes: a window across
  // the change would charge its steps with the switch (the backend drains its queue, the next
  // step is captured anew) and, at the new resolution's first sample, make it look dear enough
  // for a plan that ends the coarse steps at once.
  if (window_start_ < 0 && completed < kWarmup && elapsed < share) return std::nullopt;
  if (window_start_ < 0 || factor != window_factor_) {
    window_start_ = completed, window_elapsed_ = elapsed, window_factor_ = factor;
    return std::nullopt;
  }
  const std::int64_t steps = completed - window_start_;
  if (steps < kWindow && (steps < 2 || elapsed - window_elapsed_ < share)) return std::nullopt;
  cost_.add(splats, (elapsed - window_elapsed_) / double(steps), factor);
  window_start_ = completed, window_elapsed_ = elapsed;
  // A fit needs two measurements; then every measurement re-plans.
  if (++samples_ < 2) return std::nullopt;
  s_ = plan_compression(recipe_, cost_, project_, completed, splats,
                        (1.0 - kMargin) * (seconds_ - elapsed), factor);
  return compressed_recipe(recipe_, s_);
}

}  // namespace splat
