#include "train/checkpoints.h"

#include <chrono>

namespace splat {

double TimedCheckpoints::steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TimedCheckpoints::TimedCheckpoints(double minutes,
                                   std::function<void()> write,
                                   std::function<double()> now)
    : period_(60.0 * minutes), write_(std::move(write)), now_(std::move(now)), last_(now_()) {}

bool TimedCheckpoints::due(const StepInfo& s) {
  return s.completed < s.total && now_() - last_ >= period_;
}

void TimedCheckpoints::on_due(const StepInfo&) {
  write_();
  last_ = now_();
}

}  // namespace splat
