#include "report/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace splat {

std::string format_duration(double s) {
  char buf[32];
  const long t = long(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm%02lds", t / 3600, (t / 60) % 60, t % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

void Smoothed::add(double x) {
  sum_ = beta_ * sum_ + (1 - beta_) * x;
  weight_ = beta_ * weight_ + (1 - beta_);
  ++n_;
}

double Smoothed::value() const {
  return weight_ > 0 ? sum_ / weight_ : 0.0;
}

void StepCost::add(std::size_t splats, double seconds_per_step, int factor) {
  constexpr std::size_t kKeep = 32;
  auto& samples = levels_[factor];
  samples.emplace_back(double(splats), seconds_per_step);
  if (samples.size() > kKeep) samples.erase(samples.begin());
}

namespace {

// Seconds per step as a + b * splats.
struct Line {
  double a = 0, b = 0;
};

// One resolution's least-squares line over its samples, where they span a range of counts and
// give neither part negative.
std::optional<Line> fit(const std::vector<std::pair<double, double>>& samples) {
  double sn = 0, st = 0, snn = 0, snt = 0;
  double lo = samples.front().first, hi = lo;
  for (const auto& [n, t] : samples) {
    sn += n, st += t, snn += n * n, snt += n * t;
    lo = std::min(lo, n), hi = std::max(hi, n);
  }
  const double m = double(samples.size());
  const double det = m * snn - sn * sn;
  if (hi <= 1.1 * lo || det <= 0) return std::nullopt;
  const double b = (m * snt - sn * st) / det, a = (st - b * sn) / m;
  if (a < 0 || b < 0) return std::nullopt;
  return Line{a, b};
}

// x: the pixels per step relative to full resolution.
double pixels(int factor) {
  return 1.0 / (double(factor) * double(factor));
}

}  // namespace

std::vector<int> StepCost::nearest_levels(int factor) const {
  std::vector<int> seen;
  for (const auto& level : levels_) seen.push_back(level.first);
  std::stable_sort(seen.begin(), seen.end(), [&](int a, int b) {
    return std::abs(pixels(a) - pixels(factor)) < std::abs(pixels(b) - pixels(factor));
  });
  return seen;
}

double StepCost::measured(int factor, double n) const {
  const auto& samples = levels_.at(factor);
  if (const auto line = fit(samples)) return line->a + line->b * n;
  // Counts not spread yet (a resolution entered a few samples ago, or once the growth stopped):
  // through the latest sample with the time per splat of the nearest resolution that has a line.
  // Proportional to the count where none has. (That puts all of a step's time on its splats: on
  // fox a 1/2-size step measured at 340k splats was predicted to cost 1.7x as much at the 590k
  // cap, where it cost 1.2x, and a time budget re-planned on it ended the coarse steps early.)
  const auto& [n0, t0] = samples.back();
  for (const int other : nearest_levels(factor))
    if (const auto line = fit(levels_.at(other))) return std::max(0.0, t0 + line->b * (n - n0));
  return n0 > 0 ? t0 * n / n0 : t0;
}

double StepCost::seconds_per_step(std::size_t splats, int factor) const {
  if (levels_.empty()) return 0;
  const double n = double(splats);
  if (levels_.count(factor)) return measured(factor, n);
  // The two measured levels nearest in pixels.
  const std::vector<int> seen = nearest_levels(factor);
  const double t0 = measured(seen[0], n);
  // One level: a guess between all time per splat (the same) and all per pixel (x times). On an
  // H200 a full-resolution step cost 1.0-1.2 times a 1/4-size one on Lego (800 x 800, 400k
  // splats) and 1.9-2.4 times on fox (1080 x 1920): the splats' work dominates, so the guess is
  // the fourth root of x, 2x from 1/4 size (the side ratio, 4x, overestimated both).
  if (seen.size() == 1) return t0 * std::pow(pixels(factor) / pixels(seen[0]), 0.25);
  const double t1 = measured(seen[1], n);
  // More pixels never cost less: two fits taken at other counts can cross where they are
  // extrapolated (an H200 run at 3M splats: the factor-4 fit, steep from the growth phase, put the
  // full resolution at 0 s a step, and the ETA at 0.1 s with 34 s to go).
  const double slope = std::max(0.0, (t1 - t0) / (pixels(seen[1]) - pixels(seen[0])));
  return std::max(0.0, t0 + slope * (pixels(factor) - pixels(seen[0])));
}

double StepCost::remaining(std::int64_t it,
                           std::int64_t total,
                           std::size_t splats,
                           const StepChanges& counts,
                           int factor,
                           const StepChanges& factors) const {
  double seconds = 0;
  std::size_t i = 0, j = 0;
  for (std::int64_t from = it; from < total;) {
    // The changes that take effect after `from` steps; then steps from + 1 .. next run alike.
    while (i < counts.size() && counts[i].first <= from) splats = counts[i++].second;
    while (j < factors.size() && factors[j].first <= from) factor = int(factors[j++].second);
    std::int64_t next = total;
    if (i < counts.size()) next = std::min(next, counts[i].first);
    if (j < factors.size()) next = std::min(next, factors[j].first);
    seconds += double(next - from) * seconds_per_step(splats, factor);
    from = next;
  }
  return seconds;
}

Progress::Progress(std::int64_t first, std::int64_t total, std::int64_t log_every)
    : first_(first),
      total_(total),
      log_every_(log_every),
      tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_),
      last_sample_(start_),
      last_sample_it_(first) {}

bool Progress::due(std::int64_t it) const {
  if (it == total_) return true;
  if (tty_) return std::chrono::steady_clock::now() - last_draw_ >= std::chrono::milliseconds(100);
  return log_every_ > 0 && it % log_every_ == 0;
}

void Progress::draw(
    std::int64_t it, double loss, std::size_t splats, int factor, const Ahead& ahead) {
  const auto now = std::chrono::steady_clock::now();
  last_draw_ = now;
  // A cost sample per second or so: shorter windows are mostly noise.
  const double window = std::chrono::duration<double>(now - last_sample_).count();
  if (last_sample_factor_ != 0 && factor != last_sample_factor_) {
    // A window across a change of resolution is dropped (see TimeBudget::after_step).
    last_sample_ = now, last_sample_it_ = it;
  } else if (window >= 1.0 || (!tty_ && it > last_sample_it_)) {
    rate_ = double(it - last_sample_it_) / window;
    if (it > last_sample_it_) cost_.add(splats, window / double(it - last_sample_it_), factor);
    last_sample_ = now;
    last_sample_it_ = it;
  } else if (rate_ == 0 && it > first_) {
    rate_ = double(it - first_) / std::chrono::duration<double>(now - start_).count();
    cost_.add(splats, 1.0 / rate_, factor);
  }
  last_sample_factor_ = factor;
  const double eta = cost_.remaining(it, total_, splats, ahead.counts, factor, ahead.factors);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "iter %lld/%lld (%3.0f%%) | loss %.5f | splats %zu | %.1f it/s | ETA %s",
                (long long)it, (long long)total_, 100.0 * double(it) / double(total_), loss, splats,
                rate_, format_duration(eta).c_str());
  std::fprintf(stderr, tty_ ? "\r\033[K%s" : "%s\n", buf);
}

void Progress::note(const std::string& message) {
  std::fprintf(stderr, tty_ ? "\r\033[K%s\n" : "%s\n", message.c_str());
}

void Progress::finish() {
  if (tty_) std::fprintf(stderr, "\n");
}

}  // namespace splat
