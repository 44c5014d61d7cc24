#include "distributed/communicator.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "distributed/mpi.h"

namespace splat::dist {

namespace {
[[noreturn]] void refuse_device(const Communicator& c, const char* what) {
  throw Error(
      std::string(what) + ": the " + c.name() +
      " communicator reduces host buffers only (device buffers need a GPU communicator, NCCL)");
}
}  // namespace

void Communicator::allreduce_sum_device(float*, std::size_t, cudaStream_t, const char* what) {
  refuse_device(*this, what);
}
void Communicator::allreduce_sum_device(std::int32_t*,
                                        std::size_t,
                                        cudaStream_t,
                                        const char* what) {
  refuse_device(*this, what);
}

namespace {

class SingleProcess final : public Communicator {
 public:
  std::string name() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(std::span<float>, const char*) override {}
  void allreduce_sum(std::span<double>, const char*) override {}
  void allreduce_sum(std::span<std::int32_t>, const char*) override {}
  void allreduce_sum_device(float*, std::size_t, cudaStream_t, const char*) override {}
  void allreduce_sum_device(std::int32_t*, std::size_t, cudaStream_t, const char*) override {}
  bool reduces_device_buffers() const override { return true; }
  void broadcast(std::span<std::byte>, int, const char*) override {}
  std::vector<std::uint64_t> allgather(std::uint64_t value, const char*) override {
    return {value};
  }
  void set_timeout(double) override {}
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "\n%s\n", message.c_str());
    std::exit(1);
  }
};

Communicator* g_launched = nullptr;  // the World's (MPI under a launcher)
Communicator* g_adopted = nullptr;   // adopt_world's, deliberately not destroyed at exit (header)
char** g_argv = nullptr;

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

}  // namespace

void disable_nvlink_multicast() {
  for (const char* var :
       {"NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1"}) {
    const std::string s(var);
    const auto eq = s.find('=');
    setenv(s.substr(0, eq).c_str(), s.substr(eq + 1).c_str(), 1);
  }
}

Communicator& single_process() {
  static SingleProcess one;
  return one;
}

int launcher_size() {
  // Open MPI (mpirun), then the PMI/PMIx variables of other launchers (MPICH hydra, srun).
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const int n = env_int(var); n > 0) return n;
  return 1;
}

int launcher_local_rank() {
  // Open MPI, MPICH hydra, Slurm.
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return -1;
}

World::World(int& argc, char**& argv) : comm_(&single_process()) {
  g_argv = argv;
  const int launched = launcher_size();
  // One rank under a launcher runs MPI too where the build has it; several ranks need it.
  if (launched > 1 || (have_mpi() && std::getenv("PMIX_RANK"))) {
    disable_nvlink_multicast();  // before anything could initialize NCCL in this process
    owned_ = make_mpi_communicator(argc, argv);  // throws where the build has no MPI
    comm_ = owned_.get();
  }
  g_launched = comm_;
}

World::~World() {
  g_launched = nullptr;
}

Communicator& world() {
  if (g_adopted) return *g_adopted;
  return g_launched ? *g_launched : single_process();
}

void adopt_world(std::unique_ptr<Communicator> comm) {
  release_world();
  g_adopted = comm.release();
}

void release_world() {
  delete g_adopted;
  g_adopted = nullptr;
}

char** process_argv() {
  return g_argv;
}

}  // namespace splat::dist
