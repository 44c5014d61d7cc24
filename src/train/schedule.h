#pragma once
// Learning-rate and SH-degree schedules of 3DGS.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/backend.h"
#include "train/config.h"

namespace splat {

// Log-linear interpolation from lr0 at step 0 to lr1 at step `total` (3DGS get_expon_lr_func).
inline double exponential_lr(double lr0, double lr1, std::int64_t step, std::int64_t total) {
  const double t = total > 0 ? std::clamp(double(step) / double(total), 0.0, 1.0) : 1.0;
  return std::exp((1.0 - t) * std::log(lr0) + t * std::log(lr1));
}

// What every learning rate is multiplied by at train.batch_size B (train.lr_batch_scaling):
// sqrt(B) as Grendel-GS (Zhao et al. 2024), B, or 1. Exactly 1 at B = 1.
inline double lr_batch_factor(const TrainConfig& c) {
  switch (c.lr_batch_scaling) {
    case LrBatchScaling::Sqrt:
      return std::sqrt(double(c.batch_size));
    case LrBatchScaling::Linear:
      return double(c.batch_size);
    case LrBatchScaling::None:
      break;
  }
  return 1.0;
}

// Learning rates at `step`; the means rate is scaled by the scene extent and decays, and all are
// scaled for the batch size.
inline LearningRates learning_rates(const TrainConfig& c, double scene_extent, std::int64_t step) {
  const double f = lr_batch_factor(c);
  LearningRates lr;
  lr.means = f * scene_extent * exponential_lr(c.lr_means, c.lr_means_final, step, c.iterations);
  lr.log_scales = f * c.lr_log_scales;
  lr.quats = f * c.lr_quats;
  lr.opacity = f * c.lr_opacity;
  lr.sh0 = f * c.lr_sh0;
  lr.shN = f * c.lr_shN;
  lr.appearance = f * c.lr_appearance;
  lr.pose = f * c.lr_pose;
  return lr;
}

// Active SH degree: one more band every `every` steps, up to the model's degree.
inline int active_sh_degree(std::int64_t step, std::int64_t every, int max_degree) {
  return int(std::min<std::int64_t>(max_degree, every > 0 ? step / every : max_degree));
}

}  // namespace splat
