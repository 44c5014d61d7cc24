#pragma once
// Model snapshots for the live viewer (Trainer::set_snapshots): after every step `due` gets the
// completed count; when it says so, the queue is drained and `take` gets the parameters at that
// step boundary. On the training clock.
#include <cstdint>
#include <functional>

#include "core/gaussians.h"
#include "train/observer.h"

namespace splat {

class Snapshots : public TrainObserver {
 public:
  using Due = std::function<bool(std::int64_t iteration)>;
  using Take = std::function<void(std::int64_t iteration, Gaussians params)>;
  // `drain`: waits for the queued steps; `params`: the model as the viewer draws it.
  Snapshots(Due due, Take take, std::function<void()> drain, std::function<Gaussians()> params)
      : due_(std::move(due)),
        take_(std::move(take)),
        drain_(std::move(drain)),
        params_(std::move(params)) {}
  void on_step(const StepInfo& s) override {
    if (!due_(s.completed)) return;
    drain_();
    take_(s.completed, params_());
  }

 private:
  Due due_;
  Take take_;
  std::function<void()> drain_;
  std::function<Gaussians()> params_;
};

}  // namespace splat
