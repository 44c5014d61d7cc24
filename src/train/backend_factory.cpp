#include "train/backend_factory.h"

#include <string>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#if SPLAT_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace splat {

bool uses_cuda(const BackendConfig& cfg) {
#if SPLAT_HAVE_CUDA
  return cfg.type == BackendKind::Cuda ||
         (cfg.type == BackendKind::Auto && cuda::device_available());
#else
  return cfg.type == BackendKind::Cuda;
#endif
}

// The one place that knows which backends this build has.
std::unique_ptr<Backend> make_backend(const BackendConfig& cfg) {
#if SPLAT_HAVE_CUDA
  if (uses_cuda(cfg)) return cuda::make_backend(cfg);
#else
  if (cfg.type == BackendKind::Cuda)
    throw Error(
        "backend.type = \"cuda\": this build has no CUDA backend (configure with -DSPLAT_CUDA=ON)");
#endif
  // validate_backend() rejects these with backend.type = "cpu"; with auto they meet no GPU here.
  if (cfg.submission != Submission::Auto || cfg.pipelining != Pipelining::Auto)
    throw Error("backend.type = \"auto\" found no GPU, and backend.submission = \"" +
                std::string(to_string(cfg.submission)) + "\" / backend.pipelining = \"" +
                std::string(to_string(cfg.pipelining)) + "\" are the cuda backend's modes");
  return make_cpu_backend(cfg.threads);
}

}  // namespace splat
