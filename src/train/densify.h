#pragma once
// Densification strategies: a small lifecycle around the training step (gsplat's strategy
// objects): per-step settings before the step, and a refine hook after it.
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "train/config.h"

namespace splat {

class Densifier {
 public:
  virtual ~Densifier() = default;
  // Adds what the strategy needs inside step `step` (0-based) to its settings.
  virtual void step_settings(std::int64_t step, StepSettings& s) const = 0;
  // Called after `completed` steps; refines the backend's model on a tick and says what changed.
  virtual std::optional<RefineStats> after_step(std::int64_t completed, Backend& backend) = 0;
  // The splat count expected after each later step up to `total`, from `count` after `completed`:
  // (step, count) where the count changes. Empty when it is not predictable (ADC) or constant.
  virtual std::vector<std::pair<std::int64_t, std::size_t>> projected_counts(
      std::int64_t completed, std::int64_t total, std::size_t count) const {
    return {};
  }
};

// The strategy of densify.strategy; none is a strategy that does nothing. scene_extent is the
// scene size that ADC's scale thresholds are relative to (the trainer's scene_extent()).
std::unique_ptr<Densifier> make_densifier(const Config& cfg, double scene_extent);

}  // namespace splat
