#pragma once
// Adam (Kingma & Ba 2015) with bias correction, as torch.optim.Adam, with engine/adam.h's
// hyperparameters. Every parameter group has its own learning rate; the SH DC coefficients
// (sh0) and the higher bands (shN) differ.
#include <cmath>
#include <vector>

#include "engine/adam.h"
#include "engine/backend.h"

namespace splat::cpu {

// How a group's update departs from torch's Adam. sparse: an element with a zero gradient keeps
// its value and moments (StepSettings::sparse_sh_adam).
struct AdamOptions {
  bool sparse = false;
};

// Updates params in place; `step` is the 1-based step count after this update, lr(i) the
// learning rate of element i.
template <class T, class LrOf>
void adam_update(std::vector<T>& param,
                 const std::vector<T>& grad,
                 std::vector<T>& m,
                 std::vector<T>& v,
                 std::int64_t step,
                 LrOf lr,
                 AdamOptions options = {}) {
  const double bc1 = 1.0 - std::pow(kAdamBeta1, double(step));
  const double bc2 = 1.0 - std::pow(kAdamBeta2, double(step));
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < param.size(); ++i) {
    if (options.sparse && grad[i] == 0) continue;
    m[i] = T(kAdamBeta1 * m[i] + (1 - kAdamBeta1) * grad[i]);
    v[i] = T(kAdamBeta2 * v[i] + (1 - kAdamBeta2) * double(grad[i]) * grad[i]);
    param[i] -= T(lr(i) * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + kAdamEps));
  }
}

// One Adam step over every group of the model; sparse_sh: StepSettings::sparse_sh_adam.
void adam_step(TrainState& st, const Gaussians& grads, const LearningRates& lr, bool sparse_sh);

}  // namespace splat::cpu
