#pragma once
// A refine tick: one change of the model between training steps by a densification strategy
// (src/strategy/). The backend hands a tick its refine context, with nothing in flight, and the
// tick does its work there: the CPU context (cpu/refine_cpu.h) holds the TrainState, the CUDA one
// (cuda/refine_cuda.h) the DeviceModel, its stream and a scratch registry. The contexts are only
// declared here, so the engine names no backend and Backend::refine no strategy.
#include <cstddef>

namespace splat {

namespace cpu {
struct RefineContext;
}
namespace cuda {
struct RefineContext;
}

// What a tick changed, for the progress line and the trainer's observers.
struct RefineStats {
  std::size_t dead = 0, added = 0;                // mcmc: relocated, appended
  std::size_t cloned = 0, split = 0, pruned = 0;  // adc: decisions; pruned counts the grown set
  std::size_t count = 0;                          // live after the tick
};

class RefineTick {
 public:
  virtual ~RefineTick() = default;
  // The tick on the CPU reference backend: every tick has one, the specification of the others.
  virtual RefineStats run_cpu(cpu::RefineContext& ctx) = 0;
  // The tick on the CUDA backend, defined where the build has CUDA (a strategy's
  // <name>_tick_cuda.cpp); one without it throws splat::Error saying so.
  virtual RefineStats run_cuda(cuda::RefineContext& ctx);
};

}  // namespace splat
