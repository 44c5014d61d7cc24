#pragma once
// train.pose_opt on the GPU (engine/pose.h; the cpu backend's step is the specification): the
// step's view renders from its image's corrected camera, and the correction's update sums the
// projection backward's per-splat terms of d loss / d [R' | t'] (project_bwd's view_terms) in
// double in a fixed order (a fixed partition into blocks, a fixed tree in each, the blocks' sums
// added in block order), so that a step gives the same bits on every run, then takes the image's
// own Adam step (pose_update) in one thread.
#include <cstddef>
#include <cstdint>

#include "cuda/types.h"

namespace splat::cuda {

// The corrections of every training image, their Adam state, and which image the view shows.
struct PoseView {
  float* params = nullptr;        // [images, 9] (engine/pose.h's layout)
  float* m = nullptr;             // [images, 9]
  float* v = nullptr;             // [images, 9]
  std::int32_t* steps = nullptr;  // [images] each correction's Adam step count
  int image = 0;
  const int* image_on_device = nullptr;  // overrides `image` (a replayed step graph)
};

// The camera `base` (or *base_on_device, when set: a replayed graph) of the view, corrected by
// its image's correction, into *out (a device CameraParams the projection then reads).
void pose_camera(const PoseView& pose,
                 const CameraParams& base,
                 const CameraParams* base_on_device,
                 CameraParams* out,
                 cudaStream_t stream);

// Doubles of scratch pose_update needs for n splats.
std::size_t pose_scratch_doubles(int n);

// The step's update of the view's image's correction: d loss / d [R' | t'] summed over the n
// splats' view_terms ([n, 12]), then engine/pose.h's pose_update for the uncorrected camera
// `base` (or *base_on_device) with learning rate lr (or *lr_on_device) and pull reg. With *abort
// nonzero (an abandoned step) nothing changes.
void pose_update(const PoseView& pose,
                 const CameraParams& base,
                 const CameraParams* base_on_device,
                 const float* view_terms,
                 int n,
                 double lr,
                 const double* lr_on_device,
                 double reg,
                 double* scratch,
                 const int* abort,
                 cudaStream_t stream);

}  // namespace splat::cuda
