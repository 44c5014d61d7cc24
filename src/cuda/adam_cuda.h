#pragma once
// Adam over every parameter group in one launch, reading the gradients only (mirrors
// cpu/adam_cpu.h: torch-style bias correction, betas (0.9, 0.999), eps 1e-15).
#include <cstddef>

#include "cuda/types.h"

namespace splat::cuda {

inline constexpr int kMaxAdamGroups = 8;

// A regularizer whose gradient the update adds from the parameter itself (MCMC's L1 terms, as
// cpu::add_regularizer_grads forms them: in double, rounded to float, added to the gradient):
// reg_coef * s (1 - s) with s = sigmoid(param) for opacity, reg_coef * exp(param) for log scales.
enum class AdamReg : int { None, SigmoidSlope, Exp };

struct AdamGroup {
  float* param = nullptr;
  const float* grad = nullptr;  // read only: every step's backward overwrites it
  float* m = nullptr;
  float* v = nullptr;
  std::size_t n = 0;
  float lr = 0;
  // SH group only: coefficients per channel K > 0 selects lr_rest for elements with
  // (i / 3) % K != 0 (the DC term keeps lr).
  int sh_K = 0;
  float lr_rest = 0;
  AdamReg reg = AdamReg::None;
  double reg_coef = 0;
  // Sparse Adam (StepSettings::sparse_sh_adam): an element whose gradient is zero is left alone.
  bool sparse = false;
};

// What changes from step to step: the learning rates and the bias corrections of step t,
// 1 / (1 - beta1^t) and 1 / sqrt(1 - beta2^t) (computed in double on the host), and the factor
// on every gradient (1 / batch size: the gradients hold the sum over the batch's views).
struct AdamScalars {
  float lr[kMaxAdamGroups] = {}, lr_rest[kMaxAdamGroups] = {};
  float inv_bc1 = 1, inv_sqrt_bc2 = 1, grad_scale = 1;
};
// The scalars of `groups` at step t (1-based step count after this update).
AdamScalars adam_scalars(const AdamGroup* groups,
                         int count,
                         long long step,
                         float grad_scale = 1.0f);

// One update of every group. With `device_scalars`, the kernel reads the scalars from that device
// copy (a replayed CUDA graph) instead of groups[g].lr, `step` and `grad_scale`. With `abort`
// pointing at a nonzero device int (the step was abandoned, see cuda/renderer.h), it changes
// nothing.
void adam_step(const AdamGroup* groups,
               int count,
               long long step,
               cudaStream_t stream,
               float grad_scale = 1.0f,
               const AdamScalars* device_scalars = nullptr,
               const int* abort = nullptr);

}  // namespace splat::cuda
