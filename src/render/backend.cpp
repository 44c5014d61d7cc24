#include "render/backend.h"

#include <bit>
#include <cstdint>

#include "core/error.h"
#include "core/finite.h"
#include "dist/communicator.h"
#include "io/config.h"
#include "render/state_digest.h"
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

std::uint64_t state_digest(const TrainState& st) {
  std::uint64_t sum = 0, index = 0;
  for (const Gaussians* g : {&st.params, &st.adam_m, &st.adam_v})
    g->for_each_group([&](const char*, const std::vector<float>& v) {
      for (std::size_t i = 0; i < v.size(); i += 2, ++index) {
        const std::uint64_t hi = i + 1 < v.size() ? std::bit_cast<std::uint32_t>(v[i + 1]) : 0;
        sum += digest_term(std::bit_cast<std::uint32_t>(v[i]) | hi << 32, index);
      }
    });
  return digest_finish(sum, index, st.params.sh_degree, st.adam_step);
}

std::uint64_t Backend::state_digest() const {
  return splat::state_digest(state());
}

std::string Backend::non_finite_group() const {
  const auto bad = find_non_finite(state().params);
  return bad ? bad->group : "";
}

std::unique_ptr<Backend> make_cpu_backend(int threads);  // cpu/backend.cpp

bool uses_cuda(const BackendConfig& cfg) {
#if SPLAT_HAVE_CUDA
  return cfg.type == BackendKind::Cuda || (cfg.type == BackendKind::Auto && cuda::device_available());
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
