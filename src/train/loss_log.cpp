#include "train/loss_log.h"

namespace splat {

LossLog::LossLog(History& history,
                 std::int64_t first,
                 std::int64_t log_every,
                 std::function<double()> clock,
                 std::function<std::size_t()> splats)
    : history_(history),
      log_every_(log_every),
      clock_(std::move(clock)),
      splats_(std::move(splats)),
      logged_{first, clock_()} {}

void LossLog::on_loss(std::int64_t step, double loss) {
  smoothed_.add(loss);
  if (log_every_ <= 0 || step % log_every_ != 0) return;
  const double now = clock_();
  const double rate =
      now > logged_.second ? double(step - logged_.first) / (now - logged_.second) : 0.0;
  history_.add({{"step", step},
                {"elapsed", now},
                {"loss", loss},
                {"loss_smoothed", smoothed_.value()},
                {"splats", splats_()},
                {"its_per_s", rate}});
  logged_ = {step, now};
}

}  // namespace splat
