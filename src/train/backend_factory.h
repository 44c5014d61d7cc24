#pragma once
// The one place that knows which backends this build has.
#include <memory>

#include "engine/backend.h"
#include "engine/backend_config.h"

namespace splat {

// The backend the config asks for; auto is cuda where a GPU is present, else cpu. Throws
// splat::Error if the kind is unavailable in this build or on this machine.
std::unique_ptr<Backend> make_backend(const BackendConfig& cfg);
// Whether make_backend(cfg) makes the cuda backend (or fails trying).
bool uses_cuda(const BackendConfig& cfg);

}  // namespace splat
