#pragma once
// train.time_budget during a run: the plan of TimeBudget (time_budget.h) after every step, and the
// stop when the budget is spent. A plan that moves the iterations by more than a tenth since the
// last one shown, and the stop, are noted.
#include <cstdint>
#include <functional>
#include <string>

#include "train/config.h"
#include "train/observer.h"
#include "train/time_budget.h"

namespace splat {

class BudgetObserver : public TrainObserver {
 public:
  using Replan = std::function<void(const Config& planned)>;  // the run continues with it
  using Note = std::function<void(const std::string& line)>;
  // `recipe`: the run's config, train.time_budget set; `elapsed`: its training seconds.
  BudgetObserver(const Config& recipe,
                 CountProjection project,
                 std::function<double()> elapsed,
                 Replan replan,
                 Note note);
  void on_step(const StepInfo& s) override;

 private:
  void adopt(const Config& planned, const std::string& why, bool always_noted);

  TimeBudget budget_;
  Config current_;
  std::function<double()> elapsed_;
  Replan replan_;
  Note note_;
  std::int64_t noted_total_;  // the plan last shown
};

}  // namespace splat
