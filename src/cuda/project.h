#pragma once
// Projection stage on the GPU: mirrors cpu/project.h (EWA, SH up to degree 3, culling), one thread
// per splat.
#include "cuda/types.h"

namespace splat::cuda {

struct ProjectParams {
  int n = 0;          // splats
  int K = 1;          // SH coefficients per channel in storage, (storage degree + 1)^2
  int sh_degree = 0;  // active degree
  bool antialiased = false;
  CameraParams cam;
  // When set, the kernels read the camera from this device copy instead of `cam`: a replayed CUDA
  // graph (backend.submission = graph) keeps its parameters, so the camera of each step is written
  // there before the launch.
  const CameraParams* device_cam = nullptr;
};

// Writes every output entry of all n splats (culled splats get radii 0 and zeros elsewhere).
void project_fwd(const ProjectParams& p, GaussianPtrs in, ProjectedPtrs out, cudaStream_t stream);

// Overwrites every entry of `grads` for all n splats (zeros for culled splats and inactive SH).
void project_bwd(const ProjectParams& p, GaussianPtrs in, const ProjectedPtrs& fwd,
                 const ProjectedGradPtrs& v, GaussianGradPtrs grads, cudaStream_t stream);

}  // namespace splat::cuda
