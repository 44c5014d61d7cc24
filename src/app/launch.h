#pragma once
// Launch paths that start GPU collectives.
#include <functional>
#include <string>

namespace splat::dist {

class Communicator;

// `splat train --gpus N`: one rank per local GPU, one process each. N = 1 trains on one GPU in
// this process. For N > 1 the launching process becomes rank 0 and starts ranks 1 .. N-1 as
// copies of its own command line (SPLAT_GPU_RANK and SPLAT_NCCL_ID in their environment); every
// rank then has an NCCL communicator as world() (cuda/nccl.h). Throws where the build has no NCCL.
void launch_gpus(int gpus);
// `mpirun -n N splat train ...` on the CUDA backend, on one host or several: the ranks leave MPI
// for NCCL (collectives on the GPU), joined as place_on_gpu says; world() is the NCCL communicator
// until finish_gpus(). Throws where the build has no NCCL.
void gpus_over_mpi();

// Where a rank of `host` (an MPI job) trains on the CUDA backend: rank 0's NCCL unique id (made
// there by make_id, broadcast) and this rank's CUDA device, its local rank on its host
// (launcher_local_rank(); its rank where the launcher does not say). splat::Error when the host
// has no device for it.
struct GpuPlace {
  std::string nccl_id;
  int device = 0;
};
GpuPlace place_on_gpu(Communicator& host, const std::function<std::string()>& make_id, int devices);

// Every rank of --gpus N (or of gpus_over_mpi) at the end of a clean run: the ranks destroy their
// communicator together, then rank 0 waits for the ranks it started; throws if one of them failed.
void finish_gpus();

}  // namespace splat::dist
