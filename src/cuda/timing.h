#pragma once
// Per-stage GPU timing with CUDA events, read without extra host waits: the events of step i are
// harvested after a later synchronization has already passed them. The stage boundaries are also
// where submission = per_kernel waits (sync_each_stage).
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda/check.h"
#include "cuda/sync_log.h"

namespace splat::cuda {

class StageTimer {
 public:
  explicit StageTimer(bool enabled) : enabled_(enabled) {}
  ~StageTimer() {
    for (auto& set : sets_)
      for (Stage& s : set.stages) cudaEventDestroy(s.start), cudaEventDestroy(s.stop);
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  bool enabled() const { return enabled_; }
  void set_active(bool active) { active_ = active; }
  // With a log, end() waits for the stage to finish (counted as sync.per_kernel).
  void sync_each_stage(SyncLog* log) { sync_ = log; }
  void begin(const char* name, cudaStream_t stream) {
    if (!on()) return;
    Set& set = sets_[cur_];
    if (set.used == set.stages.size()) {
      Stage s{};
      SPLAT_CUDA_CHECK(cudaEventCreate(&s.start));
      SPLAT_CUDA_CHECK(cudaEventCreate(&s.stop));
      set.stages.push_back(s);
    }
    Stage& s = set.stages[set.used++];
    s.name = name;
    SPLAT_CUDA_CHECK(cudaEventRecord(s.start, stream));
  }
  void end(cudaStream_t stream) {
    if (on())
      SPLAT_CUDA_CHECK(cudaEventRecord(sets_[cur_].stages[sets_[cur_].used - 1].stop, stream));
    if (sync_) sync_->stream(stream, "per_kernel");
  }
  // Closes the current step; its events are read by a later harvest.
  void end_step() {
    if (!on()) return;
    sets_[cur_].complete = true;
    cur_ ^= 1;
    harvest_set(cur_);  // normally already harvested; a no-op then
  }
  // Reads the previous step's events; call only after a host wait that follows them.
  void harvest() {
    if (on()) harvest_set(cur_ ^ 1);
  }
  // After a full drain: everything recorded so far.
  void harvest_all() {
    if (!enabled_) return;
    harvest_set(cur_ ^ 1);
    if (sets_[cur_].complete) harvest_set(cur_);
  }
  // Mean milliseconds per step of each stage, in first-seen order.
  std::vector<std::pair<std::string, double>> mean_ms() const {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& name : order_)
      out.push_back({name, steps_ ? total_.at(name) / double(steps_) : 0.0});
    return out;
  }

 private:
  struct Stage {
    const char* name;
    cudaEvent_t start, stop;
  };
  struct Set {
    std::vector<Stage> stages;
    std::size_t used = 0;
    bool complete = false;
  };
  bool on() const { return enabled_ && active_; }
  void harvest_set(int i) {
    Set& set = sets_[i];
    if (!set.complete) return;
    for (std::size_t k = 0; k < set.used; ++k) {
      float ms = 0;
      SPLAT_CUDA_CHECK(cudaEventElapsedTime(&ms, set.stages[k].start, set.stages[k].stop));
      const std::string name = set.stages[k].name;
      if (!total_.count(name)) order_.push_back(name);
      total_[name] += ms;
    }
    ++steps_;
    set.used = 0;
    set.complete = false;
  }

  bool enabled_, active_ = true;
  SyncLog* sync_ = nullptr;
  Set sets_[2];
  int cur_ = 0;
  long steps_ = 0;
  std::map<std::string, double> total_;
  std::vector<std::string> order_;
};

}  // namespace splat::cuda
