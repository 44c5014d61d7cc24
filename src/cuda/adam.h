#pragma once
// Adam over every parameter group in one launch, clearing the gradients as it goes (mirrors
// cpu/adam.h: torch-style bias correction, betas (0.9, 0.999), eps 1e-15).
#include <cstddef>

#include "cuda/types.h"

namespace splat::cuda {

inline constexpr int kMaxAdamGroups = 8;

struct AdamGroup {
  float* param = nullptr;
  float* grad = nullptr;  // zeroed after use
  float* m = nullptr;
  float* v = nullptr;
  std::size_t n = 0;
  float lr = 0;
  // SH group only: coefficients per channel K > 0 selects lr_rest for elements with
  // (i / 3) % K != 0 (the DC term keeps lr).
  int sh_K = 0;
  float lr_rest = 0;
};

// step: 1-based step count after this update. grad_scale multiplies every gradient before use
// (1 / batch size: the gradients hold the sum over the batch's views).
void adam_step(const AdamGroup* groups, int count, long long step, cudaStream_t stream, float grad_scale = 1.0f);

}  // namespace splat::cuda
