#pragma once
// MCMC's per-step terms on the CPU reference backend (Kheradmand et al. 2024), the specification
// the CUDA kernels follow: the regularizers' gradients and the position noise. Its refine tick is
// the strategy's (strategy/mcmc/).
#include "engine/backend.h"

namespace splat::cpu {

// Adds the gradients of opacity_reg * mean(sigmoid(raw_opacity)) and
// scale_reg * mean(exp(log_scales)) to grads.
void add_regularizer_grads(const Gaussians& params,
                           Gaussians& grads,
                           double opacity_reg,
                           double scale_reg);

// means += noise_scale * gate(opacity) * Sigma * z (see StepSettings).
void inject_noise(Gaussians& params, double noise_scale, std::uint64_t seed);

}  // namespace splat::cpu
