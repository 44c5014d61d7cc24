#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/check.h"
#include "cuda/digest.h"
#include "cuda/warp.cuh"
#include "engine/state_digest.h"

namespace splat::config {
inline constexpr int digest_block_size = 256;
inline constexpr unsigned digest_max_blocks = 1024;  // grid-stride beyond
}  // namespace splat::config

namespace splat::cuda {
namespace {

__global__ void digest_terms_kernel(const float* __restrict__ data,
                                    std::size_t n,
                                    std::uint64_t first_word,
                                    unsigned long long* sum) {
  const std::size_t words = (n + 1) / 2;
  std::uint64_t local = 0;
  for (std::size_t w = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; w < words;
       w += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint64_t lo = __float_as_uint(data[2 * w]);
    const std::uint64_t hi = 2 * w + 1 < n ? __float_as_uint(data[2 * w + 1]) : 0u;
    local += digest_term(lo | hi << 32, first_word + w);
  }
  local = warp_sum(local);
  if ((threadIdx.x & 31) == 0 && local != 0) atomicAdd(sum, static_cast<unsigned long long>(local));
}

__global__ void count_outside_kernel(
    const float* __restrict__ data, std::size_t n, float lo, float hi, unsigned long long* count) {
  unsigned local = 0;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float x = data[i];
    local += !(isfinite(x) && x >= lo && x <= hi);
  }
  local = warp_sum(local);
  if ((threadIdx.x & 31) == 0 && local != 0)
    atomicAdd(count, static_cast<unsigned long long>(local));
}

}  // namespace

void count_outside(const float* data,
                   std::size_t n,
                   float lo,
                   float hi,
                   unsigned long long* count,
                   cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = config::digest_block_size;
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  count_outside_kernel<<<unsigned(std::min<std::size_t>(blocks, config::digest_max_blocks)),
                         kThreads, 0, stream>>>(data, n, lo, hi, count);
  SPLAT_CUDA_CHECK_LAUNCH("count_outside_kernel");
}

void add_digest_terms(const float* data,
                      std::size_t n,
                      std::uint64_t first_word,
                      unsigned long long* sum,
                      cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = config::digest_block_size;
  const std::size_t blocks = ((n + 1) / 2 + kThreads - 1) / kThreads;
  digest_terms_kernel<<<unsigned(std::min<std::size_t>(blocks, config::digest_max_blocks)),
                        kThreads, 0, stream>>>(data, n, first_word, sum);
  SPLAT_CUDA_CHECK_LAUNCH("digest_terms_kernel");
}

}  // namespace splat::cuda
