#pragma once
// Test hooks of the CUDA backend (tests/gpu): what a test may look at or disturb inside a cuda
// backend that the Backend interface does not show. Implemented in cuda_backend.cpp.
#include <cstddef>
#include <vector>

#include "cuda/device_model.h"
#include "engine/adc.h"
#include "engine/backend.h"

namespace splat::cuda {

// Test hooks: the ADC statistics of a cuda backend, read (draining it first) and replaced (one
// entry per live splat). Before the first step that accumulates they are empty.
adc::Stats adc_stats(const Backend& backend);
void set_adc_stats(Backend& backend, const adc::Stats& stats);

// Test hook: drains a cuda backend, then fills its renderer's scratch memory with 0xFF bytes.
// Nothing a step reads may come from an earlier step's scratch, so results must not change.
void poison_scratch(Backend& backend);

}  // namespace splat::cuda
