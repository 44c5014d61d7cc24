#pragma once
// Adaptive density control's per-step statistics on the GPU (3DGS, Kerbl et al. 2023; gsplat's
// DefaultStrategy), mirroring cpu/adc_cpu.h. The refine tick and the opacity reset are the
// strategy's (strategy/adc/).
#include <cstddef>
#include <cstdint>

#include "cuda/types.h"
#include "engine/adc.h"

namespace splat::cuda {

// The statistics between refine ticks on the device (adc::Stats).
struct AdcStatsPtrs {
  float* grad2d;                // [N] sum of adc::grad2d_norm over the steps
  std::int32_t* count;          // [N] steps in which the splat was visible
  float* grad2d_abs = nullptr;  // [N] the same of the absolute sums (adc::Stats), or null
};

// One step's statistics (cpu::adc_accumulate), accumulated into stats: every visible splat
// (radii > 0) adds adc::grad2d_norm of its screen-space mean gradient and one count, and with
// v_means2d_abs and stats.grad2d_abs, adc::grad2d_norm of that too. One thread per splat: no
// atomics, so the sums are those of the CPU for the same gradients.
void adc_accumulate(int n,
                    const int* radii,            // [N, 2]
                    const float* v_means2d,      // [N, 2] pixels, from rasterize_bwd
                    const float* v_means2d_abs,  // [N, 2] or null: rasterize_bwd's means2d_abs
                    float half_width,
                    float half_height,
                    const AdcStatsPtrs& stats,
                    cudaStream_t stream,
                    const int* abort = nullptr);  // nonzero device int: an abandoned step, no-op

}  // namespace splat::cuda
