#pragma once
// Training progress: one self-updating line on a terminal, plain periodic lines otherwise. The
// line shows the smoothed loss, and an ETA that expects the steps to slow down as the splat count
// grows (MCMC's growth is known ahead) and as coarse-to-fine training reaches full resolution
// (see StepCost).
#include <chrono>
#include <cstdint>
#include <map>
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

// (step, value) where a value changes over the steps ahead, in order: after `step` completed
// steps the next step runs with `value` (a splat count, or a resolution factor).
using StepChanges = std::vector<std::pair<std::int64_t, std::size_t>>;

// Seconds per step as a + b * splats, fitted by least squares over recent (splats, seconds per
// step) samples, for each training resolution (train.coarse_factor) apart. Until a resolution's
// samples span a range of counts it takes the time per splat (b) of the nearest one whose samples
// do, or, with none, assumes the time is proportional to the count; a resolution not measured yet
// is predicted from the two nearest measured ones, linear in the pixels per step (a part per splat,
// a part per pixel; never falling with the pixels), or from one alone as proportional to the square
// root of the image side (mostly time per splat).
class StepCost {
 public:
  void add(std::size_t splats, double seconds_per_step, int factor = 1);
  double seconds_per_step(std::size_t splats, int factor = 1) const;
  // The seconds left from step `it` to `total` with `splats` and `factor` now, the count after
  // each later step given by `counts` and the resolution factor by `factors`.
  double remaining(std::int64_t it,
                   std::int64_t total,
                   std::size_t splats,
                   const StepChanges& counts,
                   int factor = 1,
                   const StepChanges& factors = {}) const;

 private:
  // A measured level's seconds per step at n splats.
  double measured(int factor, double n) const;
  // The measured levels, the nearest to `factor` in pixels per step first.
  std::vector<int> nearest_levels(int factor) const;
  // factor -> its most recent (splats, seconds per step) samples
  std::map<int, std::vector<std::pair<double, double>>> levels_;
};

class Progress {
 public:
  Progress(std::int64_t first, std::int64_t total, std::int64_t log_every);
  // The steps ahead: the projected splat count (Densifier::projected_counts) and the resolution
  // factor (resolution_changes, train/resolution.h).
  struct Ahead {
    StepChanges counts, factors;
  };
  // Call after every iteration `it` (1-based count of completed iterations), which ran at
  // resolution `factor`. `ahead` is asked for only when drawing.
  template <class Projection>
  void update(std::int64_t it, double loss, std::size_t splats, int factor, Projection&& ahead) {
    if (due(it)) draw(it, loss, splats, factor, ahead());
  }
  void finish();
  void set_total(std::int64_t total) { total_ = total; }  // a re-planned run (time_budget.h)
  // A line of its own, above the progress line on a terminal.
  void note(const std::string& message);

 private:
  bool due(std::int64_t it) const;
  void draw(std::int64_t it, double loss, std::size_t splats, int factor, const Ahead& ahead);
  std::int64_t first_, total_, log_every_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_, last_sample_;
  std::int64_t last_sample_it_;
  int last_sample_factor_ = 0;  // the resolution factor of the window's steps (0: none yet)
  StepCost cost_;
  double rate_ = 0;
};

std::string format_duration(double seconds);

}  // namespace splat
