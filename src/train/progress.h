#pragma once
// Training progress: one self-updating line on a terminal, plain periodic lines otherwise. The
// line shows the smoothed loss, and an ETA that expects the steps to slow down as the splat count
// grows (MCMC's growth is known ahead; see StepCost).
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace splat {

// Exponential moving average with bias correction (as Adam's moments), so the first values are
// the mean of what came so far rather than pulled toward zero.
class Smoothed {
 public:
  explicit Smoothed(double beta = 0.99) : beta_(beta) {}
  void add(double x);
  double value() const;
  bool empty() const { return n_ == 0; }

 private:
  double beta_, sum_ = 0, weight_ = 0;
  std::int64_t n_ = 0;
};

// Seconds per step as a + b * splats, fitted by least squares over recent (splats, seconds per
// step) samples. Until the samples span a range of counts (before MCMC starts growing, say) it
// assumes the time is proportional to the count: an ETA that errs long, then comes down.
class StepCost {
 public:
  void add(std::size_t splats, double seconds_per_step);
  double seconds_per_step(std::size_t splats) const;
  // The seconds left from step `it` to `total` with `splats` now, and the count after each later
  // step given by `counts` ((step, count) where it changes, in order).
  double remaining(std::int64_t it,
                   std::int64_t total,
                   std::size_t splats,
                   const std::vector<std::pair<std::int64_t, std::size_t>>& counts) const;

 private:
  std::vector<std::pair<double, double>> samples_;  // the most recent ones
};

class Progress {
 public:
  Progress(std::int64_t first, std::int64_t total, std::int64_t log_every);
  // Call after every iteration `it` (1-based count of completed iterations). `counts` is the
  // projected splat count (Densifier::projected_counts); it is asked for only when drawing.
  template <class Projection>
  void update(std::int64_t it, double loss, std::size_t splats, Projection&& counts) {
    if (due(it)) draw(it, loss, splats, counts());
  }
  void finish();
  void set_total(std::int64_t total) { total_ = total; }  // a re-planned run (time_budget.h)
  // A line of its own, above the progress line on a terminal.
  void note(const std::string& message);

 private:
  bool due(std::int64_t it) const;
  void draw(std::int64_t it,
            double loss,
            std::size_t splats,
            const std::vector<std::pair<std::int64_t, std::size_t>>& counts);
  std::int64_t first_, total_, log_every_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_, last_sample_;
  std::int64_t last_sample_it_;
  StepCost cost_;
  double rate_ = 0;
};

std::string format_duration(double seconds);

}  // namespace splat
