#pragma once
// The GPU communicator: NCCL, one process per GPU, loaded at run time (dlopen of libnccl.so.2, as
// shipped with the CUDA toolkit), so a binary without it still starts. Built with the CUDA
// backend (src/cuda/nccl_communicator.cpp); `splat train --gpus N` (src/app) launches the ranks.
//
// Device buffers are all-reduced in place on the caller's stream. Host collectives (digests,
// the initial broadcast, config checks) go through a small device staging buffer on the
// communicator's own stream and wait, polling, for at most train.collective_timeout seconds;
// past it, or on an asynchronous NCCL error, or when a peer process has exited (the launcher's
// children), the job ends with an error naming the collective.
#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace splat::dist {

// CUDA devices this process sees (0 where there is no driver or device).
int cuda_device_count();

// A fresh ncclUniqueId as hexadecimal text, for the environment of the other ranks.
std::string nccl_unique_id();

// This process's communicator: rank `rank` of `size`, on CUDA device `device` (made current
// here), joined through `unique_id` (nccl_unique_id() of rank 0). `peers` are the process ids whose
// exit ends the job (rank 0 of --gpus N lists the ranks it started).
std::unique_ptr<Communicator> make_nccl_communicator(
    int rank, int size, const std::string& unique_id, int device, std::vector<int> peers = {});

}  // namespace splat::dist
