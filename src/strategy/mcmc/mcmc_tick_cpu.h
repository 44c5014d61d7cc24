#pragma once
// MCMC's refine tick on the CPU reference backend (Kheradmand et al. 2024), the specification the
// CUDA tick follows (mcmc_tick_cuda.cpp).
#include <cstdint>
#include <vector>

#include "engine/backend.h"
#include "strategy/mcmc/mcmc_strategy.h"

namespace splat::cpu {

// One refine tick on the state (McmcTick). Grows the state's arrays. `grads` (one entry per splat)
// weighs the draws when settings.grad_power > 0 and is not read otherwise.
RefineStats mcmc_refine(TrainState& st,
                        const McmcRefineSettings& settings,
                        const adc::Stats& grads = {});

// Draws `count` indices i with probability weight[i] / sum(weight) from the counter stream
// (seed, stream): draw j is the first i whose inclusive prefix sum exceeds u_j * total.
std::vector<std::uint32_t> sample_by_weight(const std::vector<double>& weight,
                                            std::size_t count,
                                            std::uint64_t seed,
                                            std::uint64_t stream);

}  // namespace splat::cpu
