#pragma once
// Adaptive density control's per-step statistics on the CPU reference backend (3DGS, Kerbl et al.
// 2023; gsplat's DefaultStrategy), the specification the CUDA kernel follows. Its refine tick and
// opacity reset are the strategy's (strategy/adc/).
#include "engine/adc.h"
#include "engine/backend.h"

namespace splat::cpu {

// Adds one step's statistics: every visible splat (adc::visible of its radii [N, 2]) adds
// adc::grad2d_norm of its screen-space mean gradient v_means2d [N, 2] (pixels) and one count.
// Given v_means2d_abs [N, 2] (rasterize_bwd's means2d_abs), grad2d_abs (sized here when empty)
// adds adc::grad2d_norm of it too.
void adc_accumulate(adc::Stats& stats,
                    const std::vector<int>& radii,
                    const std::vector<float>& v_means2d,
                    int width,
                    int height,
                    const std::vector<float>& v_means2d_abs = {});

}  // namespace splat::cpu
