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
};

// Writes every output entry of all n splats (culled splats get radii 0 and zeros elsewhere).
void project_fwd(const ProjectParams& p, GaussianPtrs in, ProjectedPtrs out, cudaStream_t stream);

// Overwrites every entry of `grads` for all n splats (zeros for culled splats and inactive SH).
void project_bwd(const ProjectParams& p, GaussianPtrs in, const ProjectedPtrs& fwd,
                 const ProjectedGradPtrs& v, GaussianGradPtrs grads, cudaStream_t stream);

}  // namespace splat::cuda
