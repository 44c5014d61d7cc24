#pragma once
// train.appearance = affine on the GPU: the step applies its image's colour transform [A | b] to
// the render before the loss, r' = A r + b, and forms the transform's gradient from the loss's
// (engine/appearance.h; cpu/appearance_cpu.h is the specification). The pixel sums of the gradient
// run in double in a fixed order, so a step gives the same bits on every run.
#include <cstddef>

#include "cuda/types.h"

namespace splat::cuda {

// The transforms of every training image, their gradients, and which image the view shows.
struct AppearanceView {
  const float* params = nullptr;  // [images, 12] (engine/appearance.h's layout)
  float* grads = nullptr;         // [images, 12]: the step's gradient, added to
  int image = 0;
  const int* image_on_device = nullptr;  // overrides `image` (a replayed step graph)
};

// Doubles of scratch appearance_backward needs for an image of `pixels` pixels.
std::size_t appearance_scratch_doubles(std::size_t pixels);

// out = A r + b for every pixel of render ([pixels, 3]).
void appearance_forward(const AppearanceView& a,
                        const float* render,
                        float* out,
                        std::size_t pixels,
                        cudaStream_t stream);

// v_image holds d loss / d r' and becomes d loss / d r = A^T (d loss / d r') in place; the image's
// gradient gets sum_pixels g' [r, 1]^T, then reg_slope (T - [I | 0]) with reg_slope =
// float(2 train.appearance_reg), added as two float terms in that order, as the CPU backend adds
// them.
void appearance_backward(const AppearanceView& a,
                         const float* render,
                         float* v_image,
                         std::size_t pixels,
                         float reg_slope,
                         double* scratch,
                         cudaStream_t stream);

// After the transforms' Adam update: every transform minus their mean's offset from [I | 0]
// (engine/appearance.h's appearance_mean_offset), so the mean stays the identity.
void appearance_recenter(float* params,
                         std::size_t images,
                         cudaStream_t stream,
                         const int* abort = nullptr);  // nonzero: an abandoned step, no-op

}  // namespace splat::cuda
