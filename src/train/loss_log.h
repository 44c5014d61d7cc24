#pragma once
// metrics.jsonl's loss records (report/history.h): every `log_every` steps the step's loss, the
// smoothed loss, the splat count and the steps per second since the last record.
#include <cstdint>
#include <functional>
#include <utility>

#include "report/history.h"
#include "report/progress.h"
#include "train/observer.h"

namespace splat {

class LossLog : public TrainObserver {
 public:
  // `first`: the steps done before this session; `clock`: the run's training seconds (a resumed
  // run's continue its clock); `splats`: the count when a loss arrives.
  LossLog(History& history,
          std::int64_t first,
          std::int64_t log_every,
          std::function<double()> clock,
          std::function<std::size_t()> splats);
  void on_loss(std::int64_t step, double loss) override;

 private:
  History& history_;
  std::int64_t log_every_;
  std::function<double()> clock_;
  std::function<std::size_t()> splats_;
  Smoothed smoothed_;
  std::pair<std::int64_t, double> logged_;  // the last record's step and time
};

}  // namespace splat
