#pragma once
// Image quality metrics for evaluation.
#include "core/image.h"

namespace splat {

// PSNR in dB of an RGB render (clamped to [0, 1]) against an RGB target, peak 1.
double psnr(const Image& render, const Image& target);
// Mean SSIM (11x11 Gaussian window, sigma 1.5) over pixels and channels, render clamped to [0, 1].
double ssim(const Image& render, const Image& target);

}  // namespace splat
