#pragma once
// The CUDA backend behind the Backend interface (render/backend.h).
#include <cstddef>
#include <memory>
#include <vector>

#include "render/backend.h"

namespace splat::cuda {

// True when the CUDA runtime sees at least one device.
bool device_available();
// timing: record per-stage CUDA events and report mean ms per stage.
std::unique_ptr<Backend> make_backend(bool timing);

// Test hook: the device arrays behind a cuda backend's model -- parameters, gradients, Adam m and
// v, five groups each in Gaussians::for_each_group order (20 entries) -- with their element counts
// and allocated capacities, so tests can check the slots past the live count.
struct DeviceArrayView {
  const float* data;
  std::size_t size, capacity;
};
std::vector<DeviceArrayView> model_arrays(const Backend& backend);

}  // namespace splat::cuda
