#pragma once
// The CPU reference backend behind the Backend interface (engine/backend.h).
#include <cstdint>
#include <memory>

#include "engine/backend.h"

namespace splat {

// threads: OpenMP threads, 0 = all cores; far more than the hardware's: a warning, and all cores.
std::unique_ptr<Backend> make_cpu_backend(std::int64_t threads);

}  // namespace splat
