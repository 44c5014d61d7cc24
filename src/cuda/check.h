#pragma once
// Every CUDA call and launch is checked, with the expression, file and line in the error.
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace splat::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t e,
                                          const char* expr,
                                          const char* file,
                                          int line) {
  throw Error(std::string("CUDA error: ") + cudaGetErrorString(e) + " in " + expr + " at " + file +
              ":" + std::to_string(line));
}

}  // namespace splat::cuda

#define SPLAT_CUDA_CHECK(expr)                                                \
  do {                                                                        \
    const cudaError_t splat_err_ = (expr);                                    \
    if (splat_err_ != cudaSuccess)                                            \
      ::splat::cuda::throw_cuda_error(splat_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here (no synchronization).
#define SPLAT_CUDA_CHECK_LAUNCH(name) SPLAT_CUDA_CHECK(cudaGetLastError())
