#pragma once
// Image quality metrics for evaluation.
#include "core/image.h"

namespace splat {

// PSNR in dB of an RGB render (clamped to [0, 1]) against an RGB target, peak 1.
double psnr(const Image& render, const Image& target);
// Mean SSIM (11x11 Gaussian window, sigma 1.5) over pixels and channels, render clamped to [0, 1].
double ssim(const Image& render, const Image& target);

// The render (clamped to [0, 1]) through the affine colour map [A | b] that brings it closest to
// the target in least squares (3x4, one image-wide map, as train.appearance = affine learns per
// training image), clamped to [0, 1]. A held-out view's exposure is not known to the model; this
// scores it with the best one. A faint ridge toward the identity keeps a flat render well-posed.
Image color_corrected(const Image& render, const Image& target);
// PSNR of the colour-corrected render: never below psnr(render, target). gsplat reports such a
// figure as cc_psnr with a quadratic map (after ZipNeRF): not the same measure.
double color_corrected_psnr(const Image& render, const Image& target);

}  // namespace splat
