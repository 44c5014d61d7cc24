#include "app/launch.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "distributed/communicator.h"
#if SPLAT_HAVE_NCCL
#include "cuda/nccl.h"
#endif

namespace splat::dist {

namespace {
std::vector<pid_t> g_children;  // ranks 1 .. N-1, started by rank 0
}  // namespace

void launch_gpus(int gpus) {
  disable_nvlink_multicast();
  if (gpus <= 1) return;
#if SPLAT_HAVE_NCCL
  if (const char* rank = std::getenv("SPLAT_GPU_RANK")) {  // a rank started by the launcher below
    const char* id = std::getenv("SPLAT_NCCL_ID");
    if (!id) throw Error("SPLAT_GPU_RANK is set but SPLAT_NCCL_ID is not");
    const int r = std::atoi(rank);
    adopt_world(make_nccl_communicator(r, gpus, id, r));
    return;
  }
  // Rank 0: start ranks 1 .. N-1 as copies of this command with their rank in the environment.
  if (world().size() > 1)
    throw Error("--gpus " + std::to_string(gpus) +
                " under an MPI launcher: use one of the two, not both");
  if (const int devices = cuda_device_count(); devices < gpus)
    throw Error("--gpus " + std::to_string(gpus) + ": this machine has " + std::to_string(devices) +
                " CUDA device(s)");
  const std::string id = nccl_unique_id();
  char** argv = process_argv();
  if (!argv) throw Error("--gpus: the command line is not known (no World in main)");
  std::vector<int> peers;
  const pid_t launcher = getpid();
  for (int r = 1; r < gpus; ++r) {
    const pid_t pid = fork();
    if (pid < 0) throw Error("--gpus: fork failed");
    if (pid == 0) {
      // A rank dies with rank 0 (which watches the ranks, distributed/peers.h), never left waiting
      // alone.
      if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != launcher) _exit(1);
      setenv("SPLAT_GPU_RANK", std::to_string(r).c_str(), 1);
      setenv("SPLAT_NCCL_ID", id.c_str(), 1);
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    g_children.push_back(pid);
    peers.push_back(int(pid));
  }
  adopt_world(make_nccl_communicator(0, gpus, id, 0, peers));
#else
  throw Error("--gpus " + std::to_string(gpus) +
              ": this build has no NCCL (nccl.h was not found with the CUDA toolkit), so gradients "
              "cannot be "
              "reduced across GPUs; use --gpus 1, or several processes on the CPU backend (mpirun "
              "-n N splat "
              "train ... --set backend.type=cpu)");
#endif
}

GpuPlace place_on_gpu(Communicator& host,
                      const std::function<std::string()>& make_id,
                      int devices) {
  GpuPlace place;
  const int local = launcher_local_rank();
  place.device = local >= 0 ? local : host.rank();
  if (place.device >= devices)
    throw Error("rank " + std::to_string(host.rank()) + " of " + std::to_string(host.size()) +
                " is rank " + std::to_string(place.device) + " on its host" +
                (local >= 0 ? "" : " (the launcher gives no local rank)") + ", which has " +
                std::to_string(devices) +
                " CUDA device(s): start at most one rank per GPU on each host");
  if (host.rank() == 0) place.nccl_id = make_id();
  std::int64_t length = std::int64_t(place.nccl_id.size());
  host.broadcast(std::as_writable_bytes(std::span(&length, 1)), 0, "NCCL unique id (length)");
  place.nccl_id.resize(std::size_t(length));
  host.broadcast(std::as_writable_bytes(std::span(place.nccl_id.data(), place.nccl_id.size())), 0,
                 "NCCL unique id");
  return place;
}

void gpus_over_mpi() {
  disable_nvlink_multicast();
#if SPLAT_HAVE_NCCL
  Communicator& host = world();
  const GpuPlace place = place_on_gpu(host, nccl_unique_id, cuda_device_count());
  adopt_world(make_nccl_communicator(host.rank(), host.size(), place.nccl_id, place.device));
#else
  throw Error("an MPI job of " + std::to_string(world().size()) +
              " ranks on the cuda backend: this build has no NCCL (nccl.h was not found with the "
              "CUDA toolkit); "
              "use backend.type = \"cpu\" to reduce over MPI");
#endif
}

void finish_gpus() {
  release_world();  // every rank: NCCL's destroy waits for the others (rank 0 evaluates first)
  std::string failed;
  for (const pid_t pid : g_children) {
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      failed += (failed.empty() ? "" : ", ") + std::to_string(pid);
  }
  g_children.clear();
  if (!failed.empty())
    throw Error("--gpus: the rank process(es) " + failed + " did not finish cleanly");
}

}  // namespace splat::dist
