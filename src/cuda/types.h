#pragma once
// Plain parameter structs shared by the CUDA stages. No CUDA types beyond a forward-declared
// stream, so host code can include every stage header.
#include <cstdint>

struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace splat {
struct Camera;
}

namespace splat::cuda {

struct CameraParams {
  int width = 0, height = 0;
  float fx = 0, fy = 0, cx = 0, cy = 0;
  float R[9] = {};       // world -> camera rotation, row-major
  float t[3] = {};       // world -> camera translation
  float campos[3] = {};  // camera center in world space
  static CameraParams from(const Camera& cam);
};

// Raw model parameters on the device (shapes as in core/gaussians.h).
struct GaussianPtrs {
  const float* means;        // [N, 3]
  const float* log_scales;   // [N, 3]
  const float* quats;        // [N, 4]
  const float* raw_opacity;  // [N]
  const float* sh;           // [N, K, 3]
};

// Gradients of the raw parameters, same shapes.
struct GaussianGradPtrs {
  float* means;        // [N, 3]
  float* log_scales;   // [N, 3]
  float* quats;        // [N, 4]
  float* raw_opacity;  // [N]
  float* sh;           // [N, K, 3]
};

// Output of projection, per splat.
struct ProjectedPtrs {
  float* means2d;    // [N, 2]
  float* depths;     // [N]
  float* conics;     // [N, 3] inverse 2D covariance (a, b, c)
  int* radii;        // [N, 2]; 0, 0 = culled
  float* colors;     // [N, 3]
  float* opacities;  // [N] sigmoid(raw) (times the compensation when antialiased)
};

// Gradients w.r.t. the projected quantities (accumulated by rasterize_bwd).
struct ProjectedGradPtrs {
  float* means2d;    // [N, 2]
  float* conics;     // [N, 3]
  float* colors;     // [N, 3]
  float* opacities;  // [N]
  // [N, 2] sum over pixels of |the pixel's d loss / d mean2d| per axis (AbsGS's statistic), or
  // null: not accumulated (cpu::ProjectedGrad::means2d_abs).
  float* means2d_abs = nullptr;
};

}  // namespace splat::cuda
