#include "train/budget_observer.h"

#include <cmath>
#include <cstdio>

namespace splat {

BudgetObserver::BudgetObserver(const Config& recipe,
                               CountProjection project,
                               std::function<double()> elapsed,
                               Replan replan,
                               Note note)
    : budget_(recipe, recipe.train.time_budget, std::move(project)),
      current_(recipe),
      elapsed_(std::move(elapsed)),
      replan_(std::move(replan)),
      note_(std::move(note)),
      noted_total_(recipe.train.iterations) {}

void BudgetObserver::on_step(const StepInfo& s) {
  char line[160];
  if (auto planned = budget_.after_step(s.completed, s.splats, elapsed_(), s.factor)) {
    std::snprintf(line, sizeof line,
                  "time budget %.4g s: %lld iterations planned (%.3f of the recipe's steps)",
                  budget_.seconds(), (long long)planned->train.iterations, budget_.compression());
    adopt(*planned, line, false);
  }
  if (s.completed < current_.train.iterations && budget_.spent(elapsed_())) {
    Config stop_here = current_;
    stop_here.train.iterations = s.completed;
    std::snprintf(line, sizeof line, "time budget %.4g s spent: stopping at iteration %lld",
                  budget_.seconds(), (long long)s.completed);
    adopt(stop_here, line, true);
  }
}

void BudgetObserver::adopt(const Config& planned, const std::string& why, bool always_noted) {
  current_ = planned;
  replan_(current_);
  const std::int64_t total = current_.train.iterations;
  if (always_noted || std::abs(double(total - noted_total_)) > 0.1 * double(noted_total_)) {
    note_(why);
    noted_total_ = total;
  }
}

}  // namespace splat
