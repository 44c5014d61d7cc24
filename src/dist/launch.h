#pragma once
// Launch paths that start GPU collectives.
namespace splat::dist {

// NVLink multicast (NVLS) stays off on the GPU machines: NCCL_NVLS_ENABLE=0,
// TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1, set (overriding) in this process's
// environment. Every path that may initialize NCCL calls this first.
void disable_nvlink_multicast();

// `splat train --gpus N`: one rank per local GPU. N = 1 trains on one GPU in this process; N > 1
// needs a GPU communicator (NCCL), which is not written yet: splat::Error saying so.
void check_gpus(int gpus);

}  // namespace splat::dist
