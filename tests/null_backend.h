#pragma once
// A backend that does nothing: tests of a strategy's schedule derive from it and record the
// refine ticks they are handed (at step `now`).
#include <cstdint>
#include <functional>

#include "engine/backend.h"
#include "strategy/strategy.h"

namespace splat::test {

class NullBackend : public Backend {
 public:
  std::int64_t now = 0;  // the steps completed when the densifier hands a tick
  std::string name() const override { return "recording"; }
  void set_images(const std::vector<const Image8*>&) override {}
  void set_state(const TrainState&) override {}
  void set_communicator(dist::Communicator&) override {}
  TrainState state() const override { return {}; }
  std::size_t num_splats() const override { return 10; }
  void step(std::span<const BatchView>, const StepSettings&) override {}
  void collect_losses(std::vector<StepResult>&, bool) override {}
  RefineStats refine(RefineTick&) override { return {}; }
  Image render(const Camera&, const RasterSettings&) override { return {}; }
  std::uint64_t peak_memory_bytes() const override { return 0; }
};

// Runs the densifier's schedule over steps [0, steps) on the backend, as the trainer does; returns
// the steps whose settings accumulate ADC's statistics. after(completed, result) sees each call.
inline std::size_t run_schedule(
    Densifier& d,
    NullBackend& b,
    std::int64_t steps,
    const std::function<void(std::int64_t, const std::optional<RefineStats>&)>& after = {}) {
  std::size_t accumulating = 0;
  for (std::int64_t step = 0; step < steps; ++step) {
    StepSettings s;
    d.step_settings(step, s);
    accumulating += s.accumulate_grad2d;
    b.now = step + 1;
    const auto r = d.after_step(step + 1, b);
    if (after) after(step + 1, r);
  }
  return accumulating;
}

}  // namespace splat::test
