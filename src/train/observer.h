#pragma once
// What watches the training loop (Trainer::train): the loop runs steps and tells a list of
// observers, in order, what happened; each observer does one thing (progress, metrics.jsonl,
// the time budget, checks, snapshots, checkpoints, evaluations) and is tested alone.
#include <cstddef>
#include <cstdint>

#include "engine/backend.h"

namespace splat {

// The run after a step, as the loop sees it when it tells an observer.
struct StepInfo {
  std::int64_t completed = 0;  // steps done: the 1-based number of the step just run
  std::int64_t total = 0;      // the steps the run is planned for now (a time budget re-plans)
  std::size_t splats = 0;
  int factor = 1;  // the training resolution factor of the step (train.coarse_factor)
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  // A step's loss (`step`: its 1-based number), in step order, when the backend delivers it: a
  // GPU queues steps, so losses may come steps later, and all of them before any due() work.
  virtual void on_loss(std::int64_t step, double loss) {}
  // After a refine tick of the densifier at `step`.
  virtual void on_refine(std::int64_t step, const RefineStats& stats) {}
  // After every step, on the training clock, once the losses delivered so far are told.
  virtual void on_step(const StepInfo& s) {}
  // Work at some steps after every on_step, unless the run stops there (SIGINT/SIGTERM): when
  // due() says so, on_due() runs on a drained queue, off the training clock (checkpoints,
  // evaluations).
  virtual bool due(const StepInfo& s) { return false; }
  virtual void on_due(const StepInfo& s) {}
  // Once after the last step, every loss told; `stopped`: by SIGINT/SIGTERM.
  virtual void on_end(const StepInfo& s, bool stopped) {}
};

}  // namespace splat
