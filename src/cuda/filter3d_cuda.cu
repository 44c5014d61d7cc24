// Mip-Splatting's 3D filter variances: one thread per splat takes the highest sampling rate over
// the training cameras, then the splats no camera sees get the lowest rate of those seen.
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/filter3d_cuda.h"
#include "engine/filter3d.h"
#include "engine/settings.h"

namespace splat::config {
inline constexpr int filter3d_block_size = 256;
}  // namespace splat::config

namespace splat::cuda {
namespace {

// var[i] = the splat's highest sampling rate (0: no camera sees it), for filter3d_finish_kernel.
__global__ void filter3d_rate_kernel(int n,
                                     const float* __restrict__ means,        // [n, 3]
                                     const CameraParams* __restrict__ cams,  // [count]
                                     int count,
                                     float* __restrict__ var,                 // [n]
                                     unsigned* __restrict__ fallback_bits) {  // [1]
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float m[3] = {means[i * 3], means[i * 3 + 1], means[i * 3 + 2]};
  float rate = 0.f;
  for (int c = 0; c < count; ++c) {
    const CameraParams& cam = cams[c];
    float p[3];
#pragma unroll
    for (int r = 0; r < 3; ++r)
      p[r] = cam.R[r * 3] * m[0] + cam.R[r * 3 + 1] * m[1] + cam.R[r * 3 + 2] * m[2] + cam.t[r];
    rate = fmaxf(rate, filter3d::sampling_rate(p, cam.fx, cam.fy, cam.cx, cam.cy, cam.width,
                                               cam.height, config::near_plane));
  }
  var[i] = rate;
  if (rate > 0.f) atomicMin(fallback_bits, __float_as_uint(rate));
}

__global__ void filter3d_finish_kernel(int n,
                                       float* __restrict__ var,  // [n] rate in, variance out
                                       const unsigned* __restrict__ fallback_bits) {  // [1]
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned bits = *fallback_bits;
  const float fallback = bits == 0xFFFFFFFFu ? 0.f : __uint_as_float(bits);
  var[i] = filter3d::variance(var[i], fallback);
}

}  // namespace

void filter3d_variances(int n,
                        const float* means,
                        const CameraParams* cams,
                        int count,
                        float* var,
                        unsigned* fallback_bits,
                        cudaStream_t stream) {
  if (n <= 0) return;
  SPLAT_CUDA_CHECK(cudaMemsetAsync(fallback_bits, 0xFF, sizeof(unsigned), stream));
  const int block = config::filter3d_block_size, blocks = (n + block - 1) / block;
  filter3d_rate_kernel<<<blocks, block, 0, stream>>>(n, means, cams, count, var, fallback_bits);
  SPLAT_CUDA_CHECK_LAUNCH("filter3d_rate_kernel");
  filter3d_finish_kernel<<<blocks, block, 0, stream>>>(n, var, fallback_bits);
  SPLAT_CUDA_CHECK_LAUNCH("filter3d_finish_kernel");
}

}  // namespace splat::cuda
