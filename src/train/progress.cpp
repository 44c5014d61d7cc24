#include "train/progress.h"

#include <unistd.h>

#include <cstdio>

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

Progress::Progress(std::int64_t first, std::int64_t total, std::int64_t log_every)
    : first_(first), total_(total), log_every_(log_every), tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

std::string Progress::line(std::int64_t it, double loss, std::size_t splats) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? double(it - first_) / elapsed : 0.0;
  const double eta = rate > 0 ? double(total_ - it) / rate : 0.0;
  char buf[256];
  std::snprintf(buf, sizeof buf, "iter %lld/%lld (%3.0f%%) | loss %.5f | splats %zu | %.1f it/s | ETA %s",
                (long long)it, (long long)total_, 100.0 * double(it) / double(total_), loss, splats,
                rate, format_duration(eta).c_str());
  return buf;
}

void Progress::update(std::int64_t it, double loss, std::size_t splats) {
  if (tty_) {
    const auto now = std::chrono::steady_clock::now();
    if (it != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    std::fprintf(stderr, "\r\033[K%s", line(it, loss, splats).c_str());
  } else if (it == total_ || (log_every_ > 0 && it % log_every_ == 0)) {
    std::fprintf(stderr, "%s\n", line(it, loss, splats).c_str());
  }
}

void Progress::note(const std::string& message) {
  std::fprintf(stderr, tty_ ? "\r\033[K%s\n" : "%s\n", message.c_str());
}

void Progress::finish() {
  if (tty_) std::fprintf(stderr, "\n");
}

}  // namespace splat
