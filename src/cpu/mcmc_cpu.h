#pragma once
// MCMC densification on the CPU reference backend (Kheradmand et al. 2024), the specification
// the CUDA kernels follow.
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

// One refine tick on the state (see Backend::mcmc_refine). Grows the state's arrays.
RefineStats mcmc_refine(TrainState& st, const McmcRefineSettings& settings);

// Draws `count` indices i with probability weight[i] / sum(weight) from the counter stream
// (seed, stream): draw j is the first i whose inclusive prefix sum exceeds u_j * total.
std::vector<std::uint32_t> sample_by_weight(const std::vector<double>& weight,
                                            std::size_t count,
                                            std::uint64_t seed,
                                            std::uint64_t stream);

}  // namespace splat::cpu
