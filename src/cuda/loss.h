#pragma once
// Photometric loss on the GPU, forward and gradient fused: mirrors cpu/loss.h,
// (1 - lambda) * L1 + lambda * (1 - SSIM), 11x11 Gaussian window (sigma 1.5), zero padding.
#include <cstddef>
#include <cstdint>

#include "cuda/types.h"

namespace splat::cuda {

struct LossParams {
  int width = 0, height = 0;
  float ssim_lambda = 0.2f;
};

// Scratch floats photometric_loss needs for an image of this size.
std::size_t loss_scratch_floats(int width, int height);

// image, target: [H, W, 3] float. Writes v_image [H, W, 3] = d loss / d image, and
// sums[0] = sum |image - target|, sums[1] = sum of the SSIM map (over H*W*3 entries); the caller
// turns sums into l1, ssim and the loss. sums is overwritten (not accumulated).
void photometric_loss(const LossParams& p,
                      const float* image,
                      const float* target,
                      float* v_image,
                      float* sums,
                      float* scratch,
                      cudaStream_t stream);

// Same with an 8-bit target (values / 255), used when the training images are exact in 8 bits.
void photometric_loss_u8(const LossParams& p,
                         const float* image,
                         const std::uint8_t* target,
                         float* v_image,
                         float* sums,
                         float* scratch,
                         cudaStream_t stream);

}  // namespace splat::cuda
