#include "train/show_progress.h"

namespace splat {

ShowProgress::ShowProgress(std::int64_t first,
                           std::int64_t total,
                           std::int64_t log_every,
                           std::string strategy,
                           Ahead ahead,
                           std::function<void(const StepProgress&)> hook)
    : progress_(first, total, log_every),
      log_every_(log_every),
      strategy_(std::move(strategy)),
      ahead_(std::move(ahead)),
      hook_(std::move(hook)) {}

void ShowProgress::on_loss(std::int64_t, double loss) {
  smoothed_.add(loss);
  last_loss_ = loss;
}

void ShowProgress::on_refine(std::int64_t step, const RefineStats& tick) {
  if (log_every_ <= 0 || step % (log_every_ * 10) != 0) return;
  note("refine at " + std::to_string(step) + ": " +
       (strategy_ == "mcmc"
            ? std::to_string(tick.dead) + " relocated, " + std::to_string(tick.added) + " added, "
            : std::to_string(tick.cloned) + " cloned, " + std::to_string(tick.split) + " split, " +
                  std::to_string(tick.pruned) + " pruned, ") +
       std::to_string(tick.count) + " splats");
}

void ShowProgress::on_step(const StepInfo& s) {
  progress_.set_total(s.total);
  const double shown_loss = smoothed_.empty() ? last_loss_ : smoothed_.value();
  progress_.update(s.completed, shown_loss, s.splats, s.factor,
                   [&] { return ahead_(s.completed, s.total, s.splats); });
  if (hook_ && ((log_every_ > 0 && s.completed % log_every_ == 0) || s.completed == s.total))
    hook_({s.completed, s.total, shown_loss, s.splats});
}

}  // namespace splat
