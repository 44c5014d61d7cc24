// ADC's per-step statistics on the GPU (3DGS adaptive density control), mirroring
// cpu/adc_cpu.cpp: one thread per splat and no atomics, so the sums are those of the CPU. The
// refine tick's kernels are the strategy's (strategy/adc/adc_refine_cuda.cu).
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/adc_cuda.h"
#include "cuda/check.h"
#include "cuda/launch.h"

namespace splat::config {
inline constexpr int adc_block_size = 256;
}  // namespace splat::config

namespace splat::cuda {
namespace {

constexpr int kThreads = config::adc_block_size;

// Statistics are per splat and each splat has one thread: plain read-modify-write.
__global__ void accumulate_kernel(int n,
                                  const int* __restrict__ radii,            // [N, 2]
                                  const float* __restrict__ v_means2d,      // [N, 2]
                                  const float* __restrict__ v_means2d_abs,  // [N, 2] or null
                                  float half_width,
                                  float half_height,
                                  float* __restrict__ grad2d,        // [N]
                                  std::int32_t* __restrict__ count,  // [N]
                                  float* __restrict__ grad2d_abs,    // [N] or null
                                  const int* __restrict__ abort) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n || (abort && *abort)) return;
  if (!adc::visible(&radii[std::size_t(i) * 2])) return;
  const float2 v = reinterpret_cast<const float2*>(v_means2d)[i];
  grad2d[i] = add_rn(grad2d[i], adc::grad2d_norm(v.x, v.y, half_width, half_height));
  if (grad2d_abs) {
    const float2 a = reinterpret_cast<const float2*>(v_means2d_abs)[i];
    grad2d_abs[i] = add_rn(grad2d_abs[i], adc::grad2d_norm(a.x, a.y, half_width, half_height));
  }
  count[i] += 1;
}

}  // namespace

void adc_accumulate(int n,
                    const int* radii,
                    const float* v_means2d,
                    const float* v_means2d_abs,
                    float half_width,
                    float half_height,
                    const AdcStatsPtrs& stats,
                    cudaStream_t stream,
                    const int* abort) {
  if (n <= 0) return;
  float* grad2d_abs = v_means2d_abs ? stats.grad2d_abs : nullptr;
  accumulate_kernel<<<blocks_for(std::size_t(n), kThreads), kThreads, 0, stream>>>(
      n, radii, v_means2d, v_means2d_abs, half_width, half_height, stats.grad2d, stats.count,
      grad2d_abs, abort);
  SPLAT_CUDA_CHECK_LAUNCH("adc_accumulate");
}

}  // namespace splat::cuda
