#pragma once
// Collectives between the ranks of a data-parallel training job (one process per rank). Every
// rank holds the whole model, renders its share of each step's views, and the gradient sums are
// all-reduced so that Adam, densification and the random streams run identically everywhere.
//
// Implementations: SingleProcess (size 1, every collective is the identity), MPI (host
// buffers, Open MPI; compiled in with SPLAT_MPI) and NCCL (cuda/nccl.h: device buffers on a
// stream through allreduce_sum_device; host buffers staged). Host-only communicators reject
// device buffers.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace splat::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "single", "mpi"
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In-place element-wise sum over every rank's buffer of the same length; all ranks receive the
  // same result. `what` names the collective in errors and timeouts.
  virtual void allreduce_sum(std::span<float> data, const char* what) = 0;
  virtual void allreduce_sum(std::span<double> data, const char* what) = 0;
  virtual void allreduce_sum(std::span<std::int32_t> data, const char* what) = 0;
  // The same for a device buffer, ordered on `stream` (GPU communicators). Host communicators
  // throw splat::Error: their backends reduce host copies.
  virtual void allreduce_sum_device(float* data,
                                    std::size_t count,
                                    cudaStream_t stream,
                                    const char* what);
  virtual void allreduce_sum_device(std::int32_t* data,
                                    std::size_t count,
                                    cudaStream_t stream,
                                    const char* what);
  // Whether allreduce_sum_device works (GPU communicators; size-1 ones trivially).
  virtual bool reduces_device_buffers() const { return false; }
  // root's bytes into every rank's buffer of the same length.
  virtual void broadcast(std::span<std::byte> data, int root, const char* what) = 0;
  // Every rank's value, indexed by rank.
  virtual std::vector<std::uint64_t> allgather(std::uint64_t value, const char* what) = 0;

  // A collective that has not completed after this many seconds (another rank failed or hangs)
  // ends the job with an error naming it. 0 = wait forever.
  virtual void set_timeout(double seconds) = 0;
  // Ends every rank of the job after `message` ("error: ...") is printed on this one, with the
  // rank. Never returns.
  [[noreturn]] virtual void abort(const std::string& message) = 0;
};

// The size-1 communicator of a process that runs alone.
Communicator& single_process();

// This process's place in the job, made once in main(): MPI when the process was started by an
// MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE / PMI_SIZE / PMIX_RANK) and this build has MPI;
// otherwise single_process(). A launch of several ranks without MPI in the build is an error.
// MPI is finalized when the World is destroyed.
class World {
 public:
  World(int& argc, char**& argv);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  Communicator& comm() { return *comm_; }

 private:
  std::unique_ptr<Communicator> owned_;
  Communicator* comm_;
};

// The communicator of the World made in main() (single_process() if there is none).
Communicator& world();
// Makes `comm` the world's communicator (`splat train --gpus N` makes its NCCL ranks once the
// command line is parsed). It lives until release_world(); a process that exits without it (an
// error) leaves its teardown to the operating system: NCCL's destroy waits for every rank of the
// host, which may be gone or stuck.
void adopt_world(std::unique_ptr<Communicator> comm);
// Destroys the adopted communicator; every rank calls it at the same point of a clean run (NCCL's
// destroy is collective). world() is the World's communicator again afterwards.
void release_world();
// main()'s argv (the launcher of --gpus N starts its other ranks with it).
char** process_argv();

// NVLink multicast (NVLS) stays off on the GPU machines: NCCL_NVLS_ENABLE=0,
// TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1, set (overriding) in this process's
// environment. Every path that may initialize NCCL calls this first.
void disable_nvlink_multicast();

// Ranks launched by an MPI launcher according to its environment (1 when there is none).
int launcher_size();
// This process's place among the ranks on its host according to the launcher (-1: not said).
int launcher_local_rank();

}  // namespace splat::dist
