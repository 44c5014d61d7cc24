#pragma once
// train.time_budget: the best model a wall-clock budget buys on the machine the run is on.
//
// The recipe (the resolved config: train.iterations and the schedules, auto or set) is compressed
// in steps by a factor s in (0, 1]: the iterations and every step-valued schedule (refine start
// and stop, the SH growth interval) times s, so the learning-rate decay, the growth and the SH
// bands all complete in the shorter run; the cap, the rates and the growth per tick stay. The
// plan is the largest s whose predicted time fits the budget: the cost of a step is fitted to
// the run's own measured steps against the splat count (StepCost), the counts ahead come from the
// densifier's projection. The run plans after its first two measurements (80 steps, or less on
// a slow machine) and again after every later one, as the measurements come to cover more splat
// counts and SH bands; and it stops at the budget whatever the prediction said. A budget that the
// whole recipe fits changes nothing.
// The plan depends on measured times, so a budgeted run is not bit-reproducible; its config.toml
// and checkpoint hold the planned values, which reproduce it without the budget.
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "report/progress.h"
#include "train/config.h"

namespace splat {

// The recipe with its step counts times s (each at least 1, the refine interval unchanged).
Config compressed_recipe(const Config& recipe, double s);

// (step, splat count) where the count changes after `completed` steps with `splats` now, up to
// the config's iterations: Densifier::projected_counts of the config's strategy.
using CountProjection = std::function<std::vector<std::pair<std::int64_t, std::size_t>>(
    const Config& cfg, std::int64_t completed, std::size_t splats)>;

// The largest s in (0, 1] whose compressed recipe, continued from `completed` steps with `splats`
// at resolution `factor` (train.coarse_factor's schedule: it only falls from there), is predicted
// to take at most `seconds` more (bisection; the prediction grows with s). Never below the s that
// ends the run at `completed` + 1.
double plan_compression(const Config& recipe,
                        const StepCost& cost,
                        const CountProjection& project,
                        std::int64_t completed,
                        std::size_t splats,
                        double seconds,
                        int factor = 1);

class TimeBudget {
 public:
  TimeBudget(const Config& recipe, double seconds, CountProjection project);
  // After every step, with the training seconds so far and the resolution factor the step ran at:
  // measures, and returns the config to continue with when it re-plans.
  std::optional<Config> after_step(std::int64_t completed,
                                   std::size_t splats,
                                   double elapsed,
                                   int factor = 1);
  bool spent(double elapsed) const { return elapsed >= seconds_; }
  double seconds() const { return seconds_; }
  double compression() const { return s_; }

 private:
  // Steps before the first measurement (first steps allocate and capture), and steps per
  // measurement; or a fiftieth of the budget for each, whichever comes first (at least 2 steps).
  static constexpr std::int64_t kWarmup = 20;
  static constexpr std::int64_t kWindow = 40;
  // The plan leaves this fraction of the time left unplanned: a measured cost is an average
  // over a window, and an end by the plan completes the schedules, an end by the budget does not.
  static constexpr double kMargin = 0.01;

  Config recipe_;
  double seconds_;
  CountProjection project_;
  StepCost cost_;
  double s_ = 1.0;
  std::int64_t window_start_ = -1;
  double window_elapsed_ = 0;
  int window_factor_ = 0;  // the resolution factor of the window's steps
  int samples_ = 0;
};

}  // namespace splat
