#pragma once
// metrics.jsonl: the training curve, one JSON object per line, flushed as it goes so that a
// crashed or running job can be plotted. Records: {"step", "elapsed" (training seconds), "loss",
// "loss_smoothed", "splats", "its_per_s"} every train.log_every steps, and {"step", "elapsed",
// "eval": {"psnr", "ssim", "views"}} for each evaluation during training.
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace splat {

class History {
 public:
  History() = default;  // writes nothing
  // Opens `path`. A resumed run (`first` > 0) keeps the records up to step `first` (a run killed
  // after its last checkpoint wrote records past it) and continues the file; a new run starts it.
  History(const std::string& path, std::int64_t first);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  void add(const nlohmann::json& record);
  // The "elapsed" of the last record kept from the run this one resumes (0 for a new run): a
  // resumed run's records continue its clock.
  double resumed_elapsed() const { return resumed_elapsed_; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  double resumed_elapsed_ = 0;
};

// The records of a metrics.jsonl file, in order; lines that do not parse (a torn last line of a
// killed run) are skipped.
std::vector<nlohmann::json> read_history(const std::string& path);

}  // namespace splat
