#pragma once
// The two checkpoint schedules of a run; neither writes at the last step (the run's final write
// has it). The writes run off the training clock (TrainObserver::due).
#include <cstdint>
#include <functional>

#include "train/observer.h"

namespace splat {

// output.checkpoint_every: checkpoint_<step>.ckpt every `every` steps.
class StepCheckpoints : public TrainObserver {
 public:
  // `write` writes the checkpoint of `step`; null on a rank that does not write, which still
  // pauses at the same steps (a time budget's clocks stay alike).
  StepCheckpoints(std::int64_t every, std::function<void(std::int64_t step)> write)
      : every_(every), write_(std::move(write)) {}
  bool due(const StepInfo& s) override {
    return every_ > 0 && s.completed % every_ == 0 && s.completed < s.total;
  }
  void on_due(const StepInfo& s) override {
    if (write_) write_(s.completed);
  }

 private:
  std::int64_t every_;
  std::function<void(std::int64_t step)> write_;
};

// output.checkpoint_minutes: checkpoint.ckpt once `minutes` have passed since the start or the
// last one, on the clock `now` (seconds).
class TimedCheckpoints : public TrainObserver {
 public:
  static double steady_seconds();
  TimedCheckpoints(double minutes,
                   std::function<void()> write,
                   std::function<double()> now = steady_seconds);
  bool due(const StepInfo& s) override;
  void on_due(const StepInfo& s) override;

 private:
  double period_;
  std::function<void()> write_;
  std::function<double()> now_;
  double last_;
};

}  // namespace splat
