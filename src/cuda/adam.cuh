#pragma once
// The device side of adam.h: one element's update, shared by adam_kernel and project_bwd's SH
// update (ShAdam in project.h), so that both give the same bits.
#include <cuda_runtime.h>

#include "cpu/adam.h"
#include "cuda/adam.h"

namespace splat::cuda::detail {

// Rounded once from the double constants of the reference, (1 - beta) in double first.
inline constexpr float kBeta1 = float(cpu::kAdamBeta1), kOneMinusBeta1 = float(1.0 - cpu::kAdamBeta1);
inline constexpr float kBeta2 = float(cpu::kAdamBeta2), kOneMinusBeta2 = float(1.0 - cpu::kAdamBeta2);
inline constexpr float kEps = float(cpu::kAdamEps);

// The bias corrections are folded into two host-computed factors:
// m_hat / (sqrt(v_hat) + eps) = (m / bc1) / (sqrt(v) / sqrt(bc2) + eps).
__device__ __forceinline__ void adam_element(float& p, float g, float& m, float& v, float lr, const AdamScalars& S) {
  const float gr = g * S.grad_scale;
  m = kBeta1 * m + kOneMinusBeta1 * gr;
  v = kBeta2 * v + kOneMinusBeta2 * (gr * gr);
  p -= lr * (m * S.inv_bc1) / (sqrtf(v) * S.inv_sqrt_bc2 + kEps);
}

}  // namespace splat::cuda::detail
