// cuda/device.cu compiled for Turing machine code only (CUDA_ARCHITECTURES 75-real in
// CMakeLists.txt): on any newer GPU this build has no kernel it can run, as a splat binary built
// without the GPU's architecture would.
#define SPLAT_CUDA_ARCHITECTURES "75-real"
#include "cuda/device.cu"
