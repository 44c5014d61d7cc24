// train.pose_opt on the GPU: cuda/pose_cuda.h. The arithmetic is engine/pose.h's, in double, as
// the cpu backend runs it; only the per-splat terms (project_bwd, float) and the order of their
// sum differ from the reference.
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/check.h"
#include "cuda/pose_cuda.h"
#include "engine/pose.h"

namespace splat::config {
inline constexpr int pose_block_size = 256;
inline constexpr int pose_max_blocks = 256;  // grid-stride beyond; the final sum adds this many
}  // namespace splat::config

namespace splat::cuda {
namespace {

constexpr int kThreads = config::pose_block_size;
constexpr int kTerms = int(kPoseViewGrads);

// The partition depends on n alone, so the order of every addition does.
int reduce_blocks(int n) {
  return std::min((n + kThreads - 1) / kThreads, config::pose_max_blocks);
}

__device__ void camera_arrays(const CameraParams& c, double* R, double* t) {
  for (int k = 0; k < 9; ++k) R[k] = double(c.R[k]);
  for (int k = 0; k < 3; ++k) t[k] = double(c.t[k]);
}

__global__ void pose_camera_kernel(const PoseView pose,
                                   const CameraParams base,
                                   const CameraParams* base_on_device,
                                   CameraParams* out) {
  const CameraParams& b = base_on_device ? *base_on_device : base;
  const int image = pose.image_on_device ? *pose.image_on_device : pose.image;
  double R[9], t[3], Rc[9], tc[3];
  camera_arrays(b, R, t);
  splat::pose_camera(R, t, pose.params + std::size_t(image) * kPoseFloats, Rc, tc);
  CameraParams c = b;
  for (int k = 0; k < 9; ++k) c.R[k] = float(Rc[k]);
  for (int k = 0; k < 3; ++k) c.t[k] = float(tc[k]);
  for (int k = 0; k < 3; ++k)  // the centre -R'^T t'
    c.campos[k] = float(-(Rc[k] * tc[0] + Rc[3 + k] * tc[1] + Rc[6 + k] * tc[2]));
  *out = c;
}

// Pass 1: block b sums splats b * kThreads + j (grid-stride) per thread in order, then its
// threads' sums in a fixed tree, into partial[b, 12].
__global__ void __launch_bounds__(kThreads)
    pose_partial_kernel(const float* __restrict__ view_terms,  // [n, 12]
                        int n,
                        double* __restrict__ partial) {  // [blocks, 12]
  __shared__ double sums[kThreads][kTerms + 1];
  double local[kTerms] = {};
  for (int i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads)
    for (int k = 0; k < kTerms; ++k) local[k] += double(view_terms[std::size_t(i) * kTerms + k]);
  for (int k = 0; k < kTerms; ++k) sums[threadIdx.x][k] = local[k];
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half)
      for (int k = 0; k < kTerms; ++k) sums[threadIdx.x][k] += sums[threadIdx.x + half][k];
    __syncthreads();
  }
  if (threadIdx.x < kTerms) partial[blockIdx.x * kTerms + threadIdx.x] = sums[0][threadIdx.x];
}

// Pass 2, one block: the blocks' sums in block order, then the image's update in one thread.
__global__ void pose_update_kernel(const PoseView pose,
                                   const CameraParams base,
                                   const CameraParams* base_on_device,
                                   const double* __restrict__ partial,  // [blocks, 12]
                                   int blocks,
                                   double lr,
                                   const double* lr_on_device,
                                   double reg,
                                   const int* abort) {
  if (abort && *abort) return;  // an abandoned step changes nothing
  __shared__ double v_view[kTerms];
  if (threadIdx.x < kTerms) {
    double s = 0;
    for (int b = 0; b < blocks; ++b) s += partial[b * kTerms + threadIdx.x];
    v_view[threadIdx.x] = s;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  const CameraParams& c = base_on_device ? *base_on_device : base;
  const std::size_t image = std::size_t(pose.image_on_device ? *pose.image_on_device : pose.image);
  double R[9], t[3];
  camera_arrays(c, R, t);
  splat::pose_update(R, t, v_view, lr_on_device ? *lr_on_device : lr, reg,
                     pose.params + image * kPoseFloats, pose.m + image * kPoseFloats,
                     pose.v + image * kPoseFloats, pose.steps + image);
}

}  // namespace

void pose_camera(const PoseView& pose,
                 const CameraParams& base,
                 const CameraParams* base_on_device,
                 CameraParams* out,
                 cudaStream_t stream) {
  pose_camera_kernel<<<1, 1, 0, stream>>>(pose, base, base_on_device, out);
  SPLAT_CUDA_CHECK_LAUNCH("pose_camera_kernel");
}

std::size_t pose_scratch_doubles(int n) {
  return std::size_t(std::max(reduce_blocks(n), 1)) * kTerms;
}

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
                 cudaStream_t stream) {
  const int blocks = reduce_blocks(n);
  if (blocks > 0) {
    pose_partial_kernel<<<blocks, kThreads, 0, stream>>>(view_terms, n, scratch);
    SPLAT_CUDA_CHECK_LAUNCH("pose_partial_kernel");
  }
  pose_update_kernel<<<1, 32, 0, stream>>>(pose, base, base_on_device, scratch, blocks, lr,
                                           lr_on_device, reg, abort);
  SPLAT_CUDA_CHECK_LAUNCH("pose_update_kernel");
}

}  // namespace splat::cuda
