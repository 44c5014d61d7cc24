#pragma once
// 3DGS as Markov Chain Monte Carlo (Kheradmand et al. 2024): L1 regularizers on opacity and
// scale and position noise in every step (StepPlan; the backends apply them), and refine ticks
// that relocate dead splats and grow the count up to densify.cap_max. The tick's CPU code is
// mcmc_tick_cpu.cpp (the specification), its CUDA code mcmc_tick_cuda.cpp with the kernels of
// mcmc_refine_cuda.cu; the shared math is engine/mcmc.h.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/refine.h"
#include "strategy/strategy.h"

namespace splat {

// One MCMC refine tick.
struct McmcRefineSettings {
  float min_opacity = 0.005f;    // splats at or below are dead and get relocated
  std::size_t target_count = 0;  // splats after the tick (growth), >= the current count
  std::uint64_t seed = 0;        // counter RNG seed of this tick
  // The count later ticks grow to at most (densify.cap_max), or 0: growth may reserve room for it
  // once instead of growing step by step.
  std::size_t max_count = 0;
  // Draws weigh opacity times the mean screen-space gradient since the last tick to this power
  // (mcmc::sample_weight; densify.mcmc_grad_power); 0: opacity alone, no statistics read.
  float grad_power = 0.0f;
};

// Relocates dead splats onto live ones sampled by weight (opacity, or opacity times a power of the
// ADC statistics' mean gradient: grad_power), then appends copies of sampled splats
// up to target_count, with the opacity/scale correction of mcmc::relocate on every sampled source
// and copy. Sources, relocated and new slots get zero Adam moments; the ADC statistics are reset.
class McmcTick final : public RefineTick {
 public:
  explicit McmcTick(const McmcRefineSettings& s) : settings(s) {}
  RefineStats run_cpu(cpu::RefineContext& ctx) override;
#if SPLAT_HAVE_CUDA
  RefineStats run_cuda(cuda::RefineContext& ctx) override;
#endif
  McmcRefineSettings settings;
};

std::unique_ptr<Densifier> make_mcmc_densifier(const StrategyContext& ctx);

}  // namespace splat
