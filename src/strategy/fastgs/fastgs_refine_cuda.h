#pragma once
// FastGS's ticks on the GPU (fastgs_strategy.h), mirroring the CPU ticks (fastgs_tick_cpu.h): the
// score pass's per-view kernels (error mask, masked-pixel counts, the view's share of C and S),
// the densify tick's decisions and throttled prune draw, and the final pruning's keep flags. The
// flags go into ADC's scratch (adc_refine_cuda.h), whose scan and compaction move the model.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "cuda/arena.h"
#include "cuda/rasterize_cuda.h"
#include "cuda/types.h"
#include "engine/target.h"
#include "strategy/adc/adc_refine_cuda.h"
#include "strategy/fastgs/fastgs.h"

namespace splat::cuda {

// Per-splat scratch of a tick.
struct FastgsScratch {
  std::uint32_t* count;                 // [N] C: masked pixels blended, over the views
  float* score;                         // [N] S: those counts weighted by the views' losses
  std::uint32_t* view_count;            // [N] C_v of the view being scored
  std::uint8_t* decision;               // [N] the densify decision (fastgs_refine_cuda.cu)
  float *keys, *keys_sorted;            // [N] the prune draw's keys (fastgs::prune_key)
  std::uint32_t *index, *index_sorted;  // [N]
  std::uint32_t* score_range;           // [2] S's min and max, order-preserving bits
  std::int32_t* candidates;             // [1] pruning candidates on the grown set
  void* temp;                           // CUB radix sort scratch
  std::size_t temp_bytes;
  void carve(Carver& c, int n);
};

// Per-pixel scratch of a view.
struct FastgsPixels {
  std::uint8_t* mask;          // [H, W]
  float* error;                // [H, W] mean over channels of |render - target|
  float* compensated;          // [H, W, 3] the render through the image's appearance transform
  std::uint32_t* error_range;  // [2] the error's min and max, order-preserving bits
  void carve(Carver& c, std::pair<int, int> width_height);
};

// Zeroes C and S for n splats.
void fastgs_clear_scores(int n, const FastgsScratch& s, cudaStream_t stream);

// A view's error mask (cpu::error_mask): per pixel the mean over channels of |render - target|,
// min-max normalized over the pixels the target's mask keeps, above tau.
void fastgs_error_mask(int width,
                       int height,
                       const float* render,         // [H, W, 3]
                       const std::uint8_t* target,  // [H, W, format.channels]
                       const TargetFormat& format,
                       float tau,
                       const FastgsPixels& px,
                       cudaStream_t stream);

// The view's C_v into s.view_count (cpu::masked_pixel_counts): +1 for every (masked pixel, splat)
// the forward `fwd` blended, by the forward's rule, walking each pixel's list up to its `last`.
// Then C += C_v area, S += loss C_v area.
void fastgs_count_view(const RasterState& fwd,
                       const std::uint8_t* mask,
                       int n,
                       std::uint32_t area,
                       float loss,
                       const FastgsScratch& s,
                       cudaStream_t stream);

// The densify tick's decisions (fastgs::decide on the statistics and C), the pruning scores'
// range, the prune keys of the kept originals, the draw of floor(candidates / 2) largest keys
// (ties to the lower index, as cpu::prune_draw), and ADC's flags: kept originals not drawn as
// candidates, every clone, every split pair; then adc_scan (totals into totals_host).
void fastgs_decide(int n,
                   GaussianPtrs in,
                   const float* grad2d,
                   const float* grad2d_abs,
                   const std::int32_t* vis_count,
                   const fastgs::Thresholds& t,
                   std::uint64_t seed,
                   const FastgsScratch& s,
                   const AdcScratch& adc,
                   std::int32_t* totals_host,
                   cudaStream_t stream);

// The final pruning tick's flags (cpu::fastgs_final_prune): kept where raw opacity is not below
// min_raw_opacity and the normalized score not above max_score; then adc_scan.
void fastgs_final_flags(int n,
                        const float* raw_opacity,
                        float min_raw_opacity,
                        float max_score,
                        const FastgsScratch& s,
                        const AdcScratch& adc,
                        std::int32_t* totals_host,
                        cudaStream_t stream);

}  // namespace splat::cuda
