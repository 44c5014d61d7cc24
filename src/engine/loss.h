#pragma once
// The photometric losses a training step can minimize (train.loss), as a family: each loss is one
// row of kLosses naming its terms, and the backends compute whatever terms a row names, so a new
// combination of the terms below is one enumerator and one row (cpu/loss_cpu.h is the
// specification every backend follows).
#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

#include "engine/backend_config.h"

namespace splat {

// With r the render, t the target and d = r - t over the H x W x 3 entries, a loss is
//   w_data * mean data(d)  [+ lambda (1 - mean SSIM(r, t))],  lambda = train.ssim_lambda,
// with data(d) = |d| or d^2, and w_data = 1 - lambda where the SSIM term is present, else 1.
// A loss without the SSIM term computes no SSIM at all.
enum class LossKind { L1, L2, L1Ssim, L2Ssim };
enum class DataTerm { Abs, Squared };

struct LossTerms {
  LossKind kind;
  std::string_view name;  // train.loss, and in config.toml and checkpoints
  DataTerm data;
  bool ssim;
};

inline constexpr LossTerms kLosses[] = {
    {LossKind::L1, "l1", DataTerm::Abs, false},
    {LossKind::L2, "l2", DataTerm::Squared, false},
    {LossKind::L1Ssim, "l1_ssim", DataTerm::Abs, true},  // 3DGS
    {LossKind::L2Ssim, "l2_ssim", DataTerm::Squared, true},
};

constexpr const LossTerms& loss_terms(LossKind k) {
  for (const LossTerms& row : kLosses)
    if (row.kind == k) return row;
  return kLosses[0];  // only reachable through a cast of an out-of-range integer
}

// The names in the form every enum's names take (name_in, the config's enum lookup).
inline constexpr auto kLossKindNames = [] {
  std::array<std::pair<LossKind, std::string_view>, std::size(kLosses)> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = {kLosses[i].kind, kLosses[i].name};
  return out;
}();
inline std::string_view to_string(LossKind k) {
  return name_in<LossKind>(kLossKindNames, k);
}

// The loss from the means of its terms: `data` the data term's, `ssim` SSIM's (read only by a
// loss with the SSIM term).
inline double combined_loss(LossKind k, double lambda, double data, double ssim) {
  if (!loss_terms(k).ssim) return data;
  return (1.0 - lambda) * data + lambda * (1.0 - ssim);
}

}  // namespace splat
