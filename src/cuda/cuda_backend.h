#pragma once
// The CUDA backend behind the Backend interface (engine/backend.h).
#include <cstddef>
#include <memory>
#include <vector>

#include "engine/adc.h"
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

// Test hook: the device arrays behind a cuda backend's model -- parameters, gradients, Adam m and
// v, five groups each in Gaussians::for_each_group order (20 entries) -- with their element counts
// and allocated capacities, so tests can check the slots past the live count.
struct DeviceArrayView {
  const float* data;
  std::size_t size, capacity;
};
std::vector<DeviceArrayView> model_arrays(const Backend& backend);

// Test hooks: the ADC statistics of a cuda backend, read (draining it first) and replaced (one
// entry per live splat). Before the first step that accumulates they are empty.
adc::Stats adc_stats(const Backend& backend);
void set_adc_stats(Backend& backend, const adc::Stats& stats);

// Test hook: drains a cuda backend, then fills its renderer's scratch memory with 0xFF bytes.
// Nothing a step reads may come from an earlier step's scratch, so results must not change.
void poison_scratch(Backend& backend);

}  // namespace splat::cuda
