#pragma once
// Training progress: one self-updating line on a terminal, plain periodic lines otherwise.
#include <chrono>
#include <cstdint>
#include <string>

namespace splat {

class Progress {
 public:
  Progress(std::int64_t first, std::int64_t total, std::int64_t log_every);
  // Call after every iteration `it` (1-based count of completed iterations).
  void update(std::int64_t it, double loss, std::size_t splats);
  void finish();
  // A line of its own, above the progress line on a terminal.
  void note(const std::string& message);

 private:
  std::string line(std::int64_t it, double loss, std::size_t splats) const;
  std::int64_t first_, total_, log_every_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

std::string format_duration(double seconds);

}  // namespace splat
