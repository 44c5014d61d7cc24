#include <cuda_runtime.h>

#include "cuda/accumulate.h"
#include "cuda/check.h"

namespace splat::config {
inline constexpr int accumulate_block_size = 256;
}  // namespace splat::config

namespace splat::cuda {
namespace {

__global__ void add_in_place_kernel(float* __restrict__ sum,
                                    const float* __restrict__ term,
                                    std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) sum[i] += term[i];
}

}  // namespace

void add_in_place(float* sum, const float* term, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = config::accumulate_block_size;
  add_in_place_kernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(sum, term,
                                                                                        n);
  SPLAT_CUDA_CHECK_LAUNCH("add_in_place_kernel");
}

}  // namespace splat::cuda
