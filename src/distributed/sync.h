#pragma once
// What keeps the ranks of a data-parallel job in step: reduced gradients, one initial state, and
// digests that prove the ranks still hold the same model.
#include <cstdint>
#include <string>
#include <string_view>

#include "distributed/communicator.h"
#include "engine/backend.h"

namespace splat::dist {

// 64-bit digest of text (the resolved config). A state's is engine/state_digest.h's.
std::uint64_t digest(std::string_view text);

// Compares every rank's digest of `what` (one allgather, no barrier); splat::Error naming the
// ranks that differ from rank 0, on every rank, when they are not all equal.
void expect_identical(Communicator& comm, std::uint64_t digest, const std::string& what);

// Every group of `grads` summed over the ranks, in place.
void allreduce_sum(Communicator& comm, Gaussians& grads, const char* what);

// Root's state (parameters, Adam moments and step) replaces every other rank's.
void broadcast_state(Communicator& comm, TrainState& state, int root = 0);

}  // namespace splat::dist
