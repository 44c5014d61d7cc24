#pragma once
// The CPU reference backend behind the Backend interface (render/backend.h).
#include <memory>

#include "render/backend.h"

namespace splat {

// threads: OpenMP threads, 0 = all cores.
std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace splat
