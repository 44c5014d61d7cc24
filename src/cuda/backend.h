#pragma once
// The CUDA backend behind the Backend interface (render/backend.h).
#include <memory>

#include "render/backend.h"

namespace splat::cuda {

// True when the CUDA runtime sees at least one device.
bool device_available();
// timing: record per-stage CUDA events and report mean ms per stage.
std::unique_ptr<Backend> make_backend(bool timing);

}  // namespace splat::cuda
