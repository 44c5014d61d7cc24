// Which CUDA devices this build can run on (cuda/cuda_backend.h).
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"
#include "cuda/cuda_backend.h"

#ifndef SPLAT_CUDA_ARCHITECTURES
#define SPLAT_CUDA_ARCHITECTURES "unknown"
#endif

namespace splat::cuda {
namespace {

// Compiled for exactly the architectures every kernel of the build is: the runtime has an image
// for it (machine code, or PTX it can compile) iff it has one for all of them.
__global__ void probe_kernel() {}

}  // namespace

bool device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

void require_supported_device() {
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    throw Error("cuda: cannot query the current device");
  cudaFuncAttributes attr{};
  const cudaError_t rc = cudaFuncGetAttributes(&attr, probe_kernel);
  if (rc == cudaSuccess) return;
  cudaGetLastError();  // clear the error so that later calls do not report it
  const std::string gpu = std::string(prop.name) + " (compute capability " +
                          std::to_string(prop.major) + "." + std::to_string(prop.minor) + ")";
  const std::string built =
      "this build has kernels for CUDA architectures " SPLAT_CUDA_ARCHITECTURES;
  if (prop.major * 10 + prop.minor < 75)
    throw Error("cuda: GPU " + gpu +
                " is older than splat supports (compute capability 7.5, Turing, or newer); " +
                built + ". Train on the CPU with --set backend.type=cpu");
  throw Error("cuda: GPU " + gpu + " has no kernels in this build (" + cudaGetErrorString(rc) +
              "): " + built + ". Rebuild with -DCMAKE_CUDA_ARCHITECTURES=native (or " +
              std::to_string(prop.major) + std::to_string(prop.minor) +
              ") on this machine, or train on the CPU with --set backend.type=cpu");
}

const char* built_architectures() {
  return SPLAT_CUDA_ARCHITECTURES;
}

}  // namespace splat::cuda
