#pragma once
// Launch paths that start GPU collectives.
namespace splat::dist {

// NVLink multicast (NVLS) stays off on the GPU machines: NCCL_NVLS_ENABLE=0,
// TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1, set (overriding) in this process's
// environment. Every path that may initialize NCCL calls this first.
void disable_nvlink_multicast();

// `splat train --gpus N`: one rank per local GPU, one process each. N = 1 trains on one GPU in
// this process. For N > 1 the launching process becomes rank 0 and starts ranks 1 .. N-1 as
// copies of its own command line (SPLAT_GPU_RANK and SPLAT_NCCL_ID in their environment); every
// rank then has an NCCL communicator as world() (dist/nccl.h). Throws where the build has no NCCL.
void launch_gpus(int gpus);
// Every rank of --gpus N at the end of a clean run: the ranks destroy their communicator together,
// then rank 0 waits for the ranks it started; throws if one of them failed.
void finish_gpus();

}  // namespace splat::dist
