#pragma once
// Sums across the 32 lanes of a warp: lane 0 ends with the total (the other lanes with partial
// sums). The shuffles go in a fixed order, so a float or double total has the same bits every run.
#include <cuda_runtime.h>

namespace splat::cuda {

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace splat::cuda
