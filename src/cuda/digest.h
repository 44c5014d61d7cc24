#pragma once
// Reductions over the state on the device: the terms of a group's words for the state digest
// (engine/state_digest.h), and the count of values outside a range (the divergence check).
#include <cstddef>
#include <cstdint>

#include "cuda/types.h"

namespace splat::cuda {

// *sum += the digest terms of the ceil(n / 2) words of data, numbered from first_word. Exact and
// order-free (integer adds mod 2^64).
void add_digest_terms(const float* data,  // [n]
                      std::size_t n,
                      std::uint64_t first_word,
                      unsigned long long* sum,  // [1], device
                      cudaStream_t stream);

// *count += the number of values of data[0, n) outside [lo, hi], NaN and infinities included.
void count_outside(const float* data,  // [n]
                   std::size_t n,
                   float lo,
                   float hi,
                   unsigned long long* count,  // [1], device
                   cudaStream_t stream);

}  // namespace splat::cuda
