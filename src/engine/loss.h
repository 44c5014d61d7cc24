#pragma once
// The photometric loss a training step minimizes (train.loss): which formula, the one
// string <-> value map of its names, and how a backend turns its per-view means into the loss.
// cpu/loss_cpu.h is the specification every backend follows.
#include <string_view>
#include <utility>

#include "engine/backend_config.h"

namespace splat {

// With r the render and t the target, over the H x W x 3 entries:
//   l1: mean |r - t|;  l2: mean (r - t)^2;
//   l1_ssim: (1 - lambda) mean |r - t| + lambda (1 - mean SSIM) (3DGS; lambda = train.ssim_lambda).
// l1 and l2 compute no SSIM at all.
enum class LossKind { L1, L2, L1Ssim };

inline constexpr std::pair<LossKind, std::string_view> kLossKindNames[] = {
    {LossKind::L1, "l1"}, {LossKind::L2, "l2"}, {LossKind::L1Ssim, "l1_ssim"}};
inline std::string_view to_string(LossKind k) {
  return name_in<LossKind>(kLossKindNames, k);
}

// The loss from the means of its terms: `data` is mean |r - t| (l1, l1_ssim) or mean (r - t)^2
// (l2), `ssim` the mean SSIM (read only by l1_ssim).
inline double combined_loss(LossKind k, double lambda, double data, double ssim) {
  if (k != LossKind::L1Ssim) return data;
  return (1.0 - lambda) * data + lambda * (1.0 - ssim);
}

}  // namespace splat
