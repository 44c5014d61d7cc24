#pragma once
// The device side of adam.h: one element's update, shared by adam_kernel and project_bwd's SH
// update (ShAdam in project.h), so that both give the same bits.
#include <cuda_runtime.h>

#include "cuda/adam_cuda.h"
#include "engine/adam.h"

namespace splat::cuda::detail {

// Rounded once from the double constants of the reference, (1 - beta) in double first.
inline constexpr float kBeta1 = float(kAdamBeta1), kOneMinusBeta1 = float(1.0 - kAdamBeta1);
inline constexpr float kBeta2 = float(kAdamBeta2), kOneMinusBeta2 = float(1.0 - kAdamBeta2);
inline constexpr float kEps = float(kAdamEps);

// The bias corrections are folded into two host-computed factors:
// m_hat / (sqrt(v_hat) + eps) = (m / bc1) / (sqrt(v) / sqrt(bc2) + eps).
// Every operation is an explicit intrinsic: left to itself, the compiler fuses a different
// multiply-add depending on the surrounding kernel (the float4 SH slices of project_bwd rounded
// 13% of their elements differently from adam_kernel), and the kernels must give the same bits.
// `sparse`: an element whose gradient is zero keeps p, m and v (AdamGroup::sparse).
__device__ __forceinline__ void adam_element(
    float& p, float g, float& m, float& v, float lr, const AdamScalars& S, bool sparse) {
  const float gr = __fmul_rn(g, S.grad_scale);
  if (sparse && gr == 0.0f) return;
  m = __fmaf_rn(kBeta1, m, __fmul_rn(kOneMinusBeta1, gr));
  v = __fmaf_rn(kBeta2, v, __fmul_rn(kOneMinusBeta2, __fmul_rn(gr, gr)));
  const float step = __fdiv_rn(__fmul_rn(lr, __fmul_rn(m, S.inv_bc1)),
                               __fmaf_rn(__fsqrt_rn(v), S.inv_sqrt_bc2, kEps));
  p = __fsub_rn(p, step);
}

}  // namespace splat::cuda::detail
