#pragma once
// Test hooks of the CPU backend: what a test may look at inside a cpu backend that the Backend
// interface does not show. Implemented in cpu_backend.cpp.
#include "engine/adc.h"
#include "engine/backend.h"

namespace splat::cpu {

// The ADC statistics of a CPU backend (throws splat::Error for another backend).
adc::Stats& adc_stats(Backend& cpu_backend);

}  // namespace splat::cpu
