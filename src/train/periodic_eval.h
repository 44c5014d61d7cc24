#pragma once
// train.eval_every: the test views' mean PSNR and SSIM every `every` steps (not at the last: the
// run's final evaluation has it), as a metrics.jsonl record and a progress note. Off the training
// clock (TrainObserver::due).
#include <cstdint>
#include <functional>
#include <string>

#include "report/history.h"
#include "train/observer.h"
#include "train/trainer.h"

namespace splat {

class PeriodicEval : public TrainObserver {
 public:
  PeriodicEval(std::int64_t every,
               std::function<EvalResult()> evaluate,
               History& history,
               std::function<double()> clock,
               std::function<void(const std::string&)> note);
  bool due(const StepInfo& s) override {
    return every_ > 0 && s.completed % every_ == 0 && s.completed < s.total;
  }
  void on_due(const StepInfo& s) override;

 private:
  std::int64_t every_;
  std::function<EvalResult()> evaluate_;
  History& history_;
  std::function<double()> clock_;
  std::function<void(const std::string&)> note_;
};

}  // namespace splat
