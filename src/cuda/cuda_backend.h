#pragma once
// The CUDA backend behind the Backend interface (engine/backend.h).
#include <cstddef>
#include <memory>
#include <vector>

#include "engine/backend.h"

namespace splat {
struct BackendConfig;
}

namespace splat::cuda {

// True when the CUDA runtime sees at least one device.
bool device_available();
// Throws a splat::Error naming the GPU, its compute capability and the build's architectures when
// this build has no kernels the current device can run (too old a GPU, or one left out of
// CMAKE_CUDA_ARCHITECTURES).
void require_supported_device();
// The CUDA architectures this build was compiled for, as CMAKE_CUDA_ARCHITECTURES listed them.
const char* built_architectures();
// The backend of cfg.submission, cfg.pipelining, cfg.deterministic, cfg.fast_math and cfg.timing
// (per-stage CUDA events, mean ms per stage in report()). cfg.validate_backend() has vetted the
// combination.
std::unique_ptr<Backend> make_backend(const BackendConfig& cfg);

// A device array with its live element count and its allocated capacity.
struct DeviceArrayView {
  const float* data;
  std::size_t size, capacity;
};
// The device arrays behind a cuda backend's model -- parameters, gradients, Adam m and v, five
// groups each in Gaussians::for_each_group order (20 entries) -- with their element counts and
// allocated capacities: what the Python module hands to PyTorch without a copy (DLPack), and what
// tests read to check the slots past the live count. The backend is drained first, so the arrays
// hold every step submitted so far; they stay valid until the next step or refine tick.
std::vector<DeviceArrayView> model_arrays(const Backend& backend);

}  // namespace splat::cuda
