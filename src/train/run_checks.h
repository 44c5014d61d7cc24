#pragma once
// The checks of a training run on its schedules: the model's values (divergence) and, with
// several ranks, that every rank holds the same model.
#include <cstdint>
#include <functional>
#include <string>

#include "train/observer.h"

namespace splat {

// `check` (Trainer: NaN, inf and values beyond the limits; it throws) after each of the first
// `early` steps of the session, every `every` steps and after the last. A learning rate far too
// large throws its group out of range in one step, and the next step spreads NaN to every group:
// checked at once, the first group out is the one to blame.
class DivergenceChecks : public TrainObserver {
 public:
  DivergenceChecks(std::int64_t started,
                   std::int64_t early,
                   std::int64_t every,
                   std::function<void()> check)
      : started_(started), early_(early), every_(every), check_(std::move(check)) {}
  void on_step(const StepInfo& s) override {
    if (s.completed - started_ <= early_ || s.completed % every_ == 0 || s.completed == s.total)
      check_();
  }

 private:
  std::int64_t started_, early_, every_;
  std::function<void()> check_;
};

// train.digest_every: `check(when)` (the ranks compare model digests; it throws on a difference)
// every `every` steps, and at the end of a run that was not stopped unless that step had one.
class DigestChecks : public TrainObserver {
 public:
  DigestChecks(std::int64_t every, std::function<void(const std::string& when)> check)
      : every_(every), check_(std::move(check)) {}
  void on_step(const StepInfo& s) override {
    if (every_ > 0 && s.completed % every_ == 0)
      check_("at iteration " + std::to_string(s.completed));
  }
  void on_end(const StepInfo& s, bool stopped) override {
    if (!stopped && every_ > 0 && s.total % every_ != 0) check_("at the end of training");
  }

 private:
  std::int64_t every_;
  std::function<void(const std::string& when)> check_;
};

}  // namespace splat
