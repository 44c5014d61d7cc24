#pragma once
// Photometric loss on the GPU, forward and gradient fused: mirrors cpu/loss_cpu.h, the terms the
// loss's row names (engine/loss.h): mean |d| or mean d^2, and optionally lambda * (1 - SSIM) with
// the data term weighted 1 - lambda, 11x11 Gaussian window (sigma 1.5), zero padding.
#include <cstddef>
#include <cstdint>

#include "cuda/types.h"
#include "engine/loss.h"
#include "engine/target.h"

namespace splat::cuda {

struct LossParams {
  int width = 0, height = 0;
  float ssim_lambda = 0.2f;  // losses with the SSIM term only
  LossKind kind = LossKind::L1Ssim;
};

// Scratch floats photometric_loss needs for an image of this size.
std::size_t loss_scratch_floats(int width, int height);

// A training image as the loss reads it: 8-bit, turned into the float target and the per-pixel
// weight inside the kernels by engine/target.h (straight alpha composited on the background, or a
// binary mask whose zeros leave pixels out of the loss, as cpu/loss_cpu.h).
struct LossTarget {
  const std::uint8_t* pixels = nullptr;  // [H, W, format.channels]
  TargetFormat format;
  // Device scalar H W / (pixels the mask keeps), or nullptr for 1: scales the gradient and the
  // sums so that both are means over the kept pixels while the caller divides by H W 3.
  const float* norm = nullptr;
};

// What photometric_loss writes: the gradient, the sums (overwritten, not accumulated) and its
// scratch.
struct LossBuffers {
  float* v_image;  // [H, W, 3] d loss / d image
  // [2]: the sum of the data term (|image - target| or (image - target)^2), and the sum of the
  // SSIM map (0 for a loss without it), over H*W*3 entries, times the target's norm; the caller
  // turns them into the loss (combined_loss, engine/loss.h).
  float* sums;
  float* scratch;  // [loss_scratch_floats(W, H)]
};

// image: [H, W, 3] float. Writes out.v_image and out.sums.
void photometric_loss(const LossParams& p,
                      const float* image,
                      const LossTarget& target,
                      const LossBuffers& out,
                      cudaStream_t stream);

// Same with a float target [H, W, 3] and every pixel counted (the parity tests' general case).
void photometric_loss(const LossParams& p,
                      const float* image,
                      const float* target,
                      const LossBuffers& out,
                      cudaStream_t stream);

}  // namespace splat::cuda
