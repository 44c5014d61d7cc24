#pragma once
// Projection stage on the GPU: mirrors cpu/project_cpu.h (EWA, SH up to degree 3, culling), one
// thread per splat.
#include "cuda/adam_cuda.h"
#include "cuda/types.h"

namespace splat::cuda {

struct ProjectParams {
  int n = 0;                 // splats
  int K = 1;                 // SH coefficients per channel in storage, (storage degree + 1)^2
  int sh_degree = 0;         // active degree
  bool antialiased = false;  // the 2D mip filter
  // Mip-Splatting's 3D filter variance per splat ([N], engine/filter3d.h), or null for none.
  const float* filter3d = nullptr;
  CameraParams cam;
  // When set, the kernels read the camera from this device copy instead of `cam`: a replayed CUDA
  // graph (backend.submission = graph) keeps its parameters, so the camera of each step is written
  // there before the launch.
  const CameraParams* device_cam = nullptr;
};

// Writes every output entry of all n splats (culled splats get radii 0 and zeros elsewhere).
void project_fwd(const ProjectParams& p, GaussianPtrs in, ProjectedPtrs out, cudaStream_t stream);

// What project_fwd was given and wrote, as project_bwd reads it (a backward must be given the
// params and outputs of its forward).
struct ProjectState {
  ProjectParams params;
  ProjectedPtrs out;  // [N] each
};

// Adam on the SH coefficients inside project_bwd, for a step whose gradient needs no sum (one view
// on one GPU): `group` is the SH group of adam_step (its grad is not read), its learning rates
// are scalars.lr[index] and scalars.lr_rest[index], and a replayed graph reads the scalars from
// device_scalars instead. With *abort nonzero (an abandoned step) the kernel changes nothing.
struct ShAdam {
  AdamGroup group;
  int index = 0;
  AdamScalars scalars;
  const AdamScalars* device_scalars = nullptr;
  const int* abort = nullptr;
};

// Overwrites every entry of `grads` for all n splats (zeros for culled splats and inactive SH),
// from the forward's inputs `in` and state `fwd` and the gradients v of its outputs. With sh_adam,
// grads.sh is left alone: the SH coefficients (in.sh, which must be the group's parameters) get
// the Adam update adam_step would give them from those gradients, same bits. With view_terms
// ([N, 12], train.pose_opt), each splat's terms of d loss / d [R | t] of the camera go there
// (engine/pose.h's pose_splat_grad; zeros for culled splats): cuda/pose_cuda.h sums them.
void project_bwd(GaussianPtrs in,
                 const ProjectState& fwd,
                 const ProjectedGradPtrs& v,
                 GaussianGradPtrs grads,
                 cudaStream_t stream,
                 const ShAdam* sh_adam = nullptr,
                 float* view_terms = nullptr);

}  // namespace splat::cuda
