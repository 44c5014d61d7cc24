#pragma once
// FastGS's ticks on the CPU reference backend: the score pass over sampled views, the densify
// tick and the final pruning tick (fastgs_strategy.h). Naive loops, the specification a CUDA tick
// will follow.
#include <cstdint>
#include <span>
#include <vector>

#include "core/image.h"
#include "cpu/pipeline.h"
#include "engine/backend.h"
#include "strategy/fastgs/fastgs_strategy.h"

namespace splat::cpu {

// A view's error mask [H, W] (1: in): the mean over channels of |render - target| per pixel,
// min-max normalized over the pixels the loss sees (weights, [H, W] or empty: all), above tau
// (fastgs::in_error_mask). Pixels outside the loss are never in it.
std::vector<std::uint8_t> error_mask(const std::vector<float>& render,  // [H, W, 3]
                                     const std::vector<float>& target,  // [H, W, 3]
                                     const std::vector<float>& weights,
                                     float tau);

// Per splat, the pixels of `mask` it is blended into in the forward `fwd` of a width x height
// view: +1 for every (masked pixel, splat) the forward's blending rule (blend_pixel: alpha at
// least 1/255, before the pixel's transmittance runs out) emits; unweighted.
std::vector<std::uint32_t> masked_pixel_counts(const RenderState<float>& fwd,
                                               const std::vector<std::uint8_t>& mask,
                                               int width,
                                               int height,
                                               const RasterSettings& rs);

// The score pass: C (count) and S (score) per splat over the views: C_i = sum_v C_iv (the masked
// pixels splat i blends in view v, times factor^2), S_i = sum_v P_v C_iv with P_v the view's
// loss 0.8 L1 + 0.2 (1 - SSIM) against its loss target (through the image's appearance
// transform when the state has them). The model is not changed.
FastgsScores score_views(const TrainState& st,
                         const std::vector<const Image8*>& images,
                         const FastgsViews& views);

// Which of the splats the throttled prune draws: the `draws` largest fastgs::prune_key of those
// eligible (ties to the lower index), fewer if fewer are eligible.
std::vector<bool> prune_draw(std::uint64_t seed,
                             std::span<const float> prune_score,
                             const std::vector<bool>& eligible,
                             std::size_t draws);

// The densify tick (FastgsTick) from the statistics (one entry per splat; reset afterwards), the
// abs statistic grad2d_abs [N] and the scores of views.size() views.
RefineStats fastgs_refine(TrainState& st,
                          adc::Stats& stats,
                          std::span<const float> grad2d_abs,
                          const FastgsScores& scores,
                          std::uint32_t views,
                          const FastgsRefineSettings& settings);

// The final pruning tick (FastgsFinalTick): removes splats below min_opacity or whose normalized
// score is above max_score; resets the statistics.
RefineStats fastgs_final_prune(TrainState& st,
                               adc::Stats& stats,
                               const FastgsScores& scores,
                               float min_opacity,
                               float max_score);

}  // namespace splat::cpu
