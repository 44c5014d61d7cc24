#pragma once
// The progress line of a training run (report/progress.h) and its notes: refine ticks every ten
// log intervals; other observers' notes (evaluations, time-budget plans) through note(). `hook`,
// if set, gets what the line shows every log interval and after the last step
// (Trainer::set_progress_hook).
#include <cstdint>
#include <functional>
#include <string>

#include "report/progress.h"
#include "train/config.h"
#include "train/observer.h"
#include "train/trainer.h"

namespace splat {

class ShowProgress : public TrainObserver {
 public:
  // The splat counts and resolution factors ahead of `completed` steps of `total`.
  using Ahead = std::function<Progress::Ahead(
      std::int64_t completed, std::int64_t total, std::size_t splats)>;
  ShowProgress(std::int64_t first,
               std::int64_t total,
               std::int64_t log_every,
               std::string strategy,
               Ahead ahead,
               std::function<void(const StepProgress&)> hook = nullptr);
  void note(const std::string& line) { progress_.note(line); }

  void on_loss(std::int64_t step, double loss) override;
  void on_refine(std::int64_t step, const RefineStats& stats) override;
  void on_step(const StepInfo& s) override;
  void on_end(const StepInfo& s, bool stopped) override { progress_.finish(); }

 private:
  Progress progress_;
  std::int64_t log_every_;
  std::string strategy_;  // densify.strategy: adc reports clones and splits
  Ahead ahead_;
  std::function<void(const StepProgress&)> hook_;
  Smoothed smoothed_;
  double last_loss_ = 0;
};

}  // namespace splat
