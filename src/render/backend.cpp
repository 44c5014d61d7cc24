#include "render/backend.h"

#include "core/error.h"
#include "dist/communicator.h"
#include "io/config.h"
#if SPLAT_HAVE_CUDA
#include "cuda/backend.h"
#endif

namespace splat {

void Backend::set_communicator(dist::Communicator& comm) {
  if (comm.size() > 1)
    throw Error("the " + name() + " backend cannot train on " + std::to_string(comm.size()) +
                " ranks: it has no gradient reduction for the " + comm.name() +
                " communicator (backend.type = \"cpu\" reduces host gradients over MPI)");
}

std::unique_ptr<Backend> make_cpu_backend(int threads);  // cpu/backend.cpp

// The one place that knows which backends this build has.
std::unique_ptr<Backend> make_backend(const BackendConfig& cfg) {
#if SPLAT_HAVE_CUDA
  if (cfg.type == BackendKind::Cuda || (cfg.type == BackendKind::Auto && cuda::device_available()))
    return cuda::make_backend(cfg);
#else
  if (cfg.type == BackendKind::Cuda)
    throw Error("backend.type = \"cuda\": this build has no CUDA backend (configure with -DSPLAT_CUDA=ON)");
#endif
  // validate_backend() rejects these with backend.type = "cpu"; with auto they meet no GPU here.
  if (cfg.submission != Submission::Auto || cfg.pipelining != Pipelining::Auto)
    throw Error("backend.type = \"auto\" found no GPU, and backend.submission = \"" +
                std::string(to_string(cfg.submission)) + "\" / backend.pipelining = \"" +
                std::string(to_string(cfg.pipelining)) + "\" are the cuda backend's modes");
  return make_cpu_backend(int(cfg.threads));
}

}  // namespace splat
