#pragma once
// Gradients of a batch of views: each view's backward overwrites a gradient buffer, so the views
// after the first are added into the first one's (mirrors the CPU backend's add_in_place).
#include <cstddef>

#include "cuda/types.h"

namespace splat::cuda {

// sum[i] += term[i] for i < n.
void add_in_place(float* sum,         // [n]
                  const float* term,  // [n]
                  std::size_t n,
                  cudaStream_t stream);

}  // namespace splat::cuda
