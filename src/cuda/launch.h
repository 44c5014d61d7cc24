#pragma once
// Launch geometry shared by the element-wise kernels.
#include <cstddef>

namespace splat::cuda {

// Blocks of `threads` threads that cover `items` (a one-dimensional launch).
inline unsigned blocks_for(std::size_t items, int threads) {
  return unsigned((items + std::size_t(threads) - 1) / std::size_t(threads));
}

}  // namespace splat::cuda
