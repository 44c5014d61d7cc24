// The per-image affine colour transform on the GPU (cuda/appearance_cuda.h): one elementwise kernel
// forward; backward, the in-place A^T g and the transform's 12 pixel sums in two kernels -- per
// block partial sums in double, then one block that adds them in block order -- with no atomics.
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/appearance_cuda.h"
#include "cuda/check.h"
#include "cuda/warp.cuh"
#include "engine/appearance.h"

namespace splat::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSums = int(kAppearanceFloats);  // one per entry of [A | b]
// Blocks of the partial sums: enough to fill a GPU, few enough for one block to add them. A fixed
// function of the pixel count, so the order of every sum is too.
constexpr std::size_t kMaxBlocks = 1024;

std::size_t sum_blocks(std::size_t pixels) {
  return std::max<std::size_t>(1, std::min(kMaxBlocks, (pixels + kThreads - 1) / kThreads));
}

// The view's transform starts at this entry of params and grads.
__device__ __forceinline__ std::size_t transform_at(const AppearanceView& a) {
  return std::size_t(a.image_on_device ? *a.image_on_device : a.image) * kSums;
}

__global__ void __launch_bounds__(kThreads) appearance_fwd_kernel(AppearanceView a,
                                                                  const float* __restrict__ render,
                                                                  float* __restrict__ out,
                                                                  std::size_t pixels) {
  const std::size_t p = std::size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (p >= pixels) return;
  appearance_pixel(a.params + transform_at(a), render + 3 * p, out + 3 * p);
}

// v_image = A^T g in place; block b writes its sums of g_c r_k (entry c * 4 + k) and g_c (entry
// c * 4 + 3) to partial[b * 12 ...].
__global__ void __launch_bounds__(kThreads)
    appearance_bwd_kernel(AppearanceView a,
                          const float* __restrict__ render,
                          float* __restrict__ v_image,
                          std::size_t pixels,
                          double* __restrict__ partial) {  // [blocks, 12]
  __shared__ double s_red[kSums][kWarps];
  const float* m = a.params + transform_at(a);
  double sum[kSums] = {};
  for (std::size_t p = std::size_t(blockIdx.x) * kThreads + threadIdx.x; p < pixels;
       p += std::size_t(gridDim.x) * kThreads) {
    const float g[3] = {v_image[3 * p], v_image[3 * p + 1], v_image[3 * p + 2]};
    appearance_pixel_bwd(m, render + 3 * p, g, v_image + 3 * p, sum);
  }
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
#pragma unroll
  for (int j = 0; j < kSums; ++j) {
    const double w = warp_sum(sum[j]);
    if (lane == 0) s_red[j][warp] = w;
  }
  __syncthreads();
  if (threadIdx.x < kSums) {
    double t = 0;
    for (int w = 0; w < kWarps; ++w) t += s_red[threadIdx.x][w];
    partial[std::size_t(blockIdx.x) * kSums + threadIdx.x] = t;
  }
}

// One warp per entry j of [A | b]: the blocks' partial sums of j, then the regularizer's pull.
__global__ void __launch_bounds__(kSums * 32) appearance_grad_kernel(
    AppearanceView a, const double* __restrict__ partial, int blocks, float reg_slope) {
  const int j = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  double t = 0;
  for (int b = lane; b < blocks; b += 32) t += partial[std::size_t(b) * kSums + j];
  t = warp_sum(t);
  if (lane == 0) {
    const std::size_t i = transform_at(a) + j;
    float g = a.grads[i] + float(t);
    g += reg_slope * (a.params[i] - appearance_identity(std::size_t(j)));
    a.grads[i] = g;
  }
}

// One block: entry k's offset by thread k (the host's loop, the same bits), then every entry.
__global__ void __launch_bounds__(kThreads)
    appearance_recenter_kernel(float* params, std::size_t images, const int* abort) {
  if (abort && *abort) return;  // an abandoned step: Adam moved nothing, the mean is as it was
  __shared__ float s_offset[kSums];
  if (threadIdx.x < kSums)
    s_offset[threadIdx.x] = appearance_mean_offset(params, images, threadIdx.x);
  __syncthreads();
  for (std::size_t e = threadIdx.x; e < images * kSums; e += kThreads)
    params[e] -= s_offset[e % kSums];
}

}  // namespace

void appearance_recenter(float* params, std::size_t images, cudaStream_t stream, const int* abort) {
  if (images == 0) return;
  appearance_recenter_kernel<<<1, kThreads, 0, stream>>>(params, images, abort);
  SPLAT_CUDA_CHECK_LAUNCH("appearance_recenter_kernel");
}

std::size_t appearance_scratch_doubles(std::size_t pixels) {
  return sum_blocks(pixels) * kSums;
}

void appearance_forward(const AppearanceView& a,
                        const float* render,
                        float* out,
                        std::size_t pixels,
                        cudaStream_t stream) {
  if (pixels == 0) return;
  appearance_fwd_kernel<<<unsigned((pixels + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      a, render, out, pixels);
  SPLAT_CUDA_CHECK_LAUNCH("appearance_fwd_kernel");
}

void appearance_backward(const AppearanceView& a,
                         const float* render,
                         float* v_image,
                         std::size_t pixels,
                         float reg_slope,
                         double* scratch,
                         cudaStream_t stream) {
  if (pixels == 0) return;
  const std::size_t blocks = sum_blocks(pixels);
  appearance_bwd_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(a, render, v_image, pixels,
                                                                   scratch);
  SPLAT_CUDA_CHECK_LAUNCH("appearance_bwd_kernel");
  appearance_grad_kernel<<<1, kSums * 32, 0, stream>>>(a, scratch, int(blocks), reg_slope);
  SPLAT_CUDA_CHECK_LAUNCH("appearance_grad_kernel");
}

}  // namespace splat::cuda
