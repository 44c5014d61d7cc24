// The CUDA backend (cuda/backend.h): construction, the submission and pipelining a communicator
// allows, renders and the report. The class is in backend_impl.h; the step engine, with the
// submission modes described, is in backend_step.cpp, the refine ticks in backend_refine.cpp,
// images, state and the test hooks in backend_state.cpp.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "cuda/backend_impl.h"
#include "dist/communicator.h"
#include "render/backend_config.h"

namespace splat::cuda {

CudaBackend::CudaBackend(const BackendConfig& cfg)
    : auto_submission_(cfg.submission == Submission::Auto),
      auto_pipelining_(cfg.pipelining == Pipelining::Auto),
      submission_(resolved(cfg.submission, cfg.timing)),
      depth_(resolved(cfg.pipelining, submission_, cfg.timing) == Pipelining::Depth2 ? 2 : 1),
      deterministic_(cfg.deterministic),
      stream_(new_stream()),
      timer_(cfg.timing),
      renderer_(stream_, syncs_, timer_, cfg.fast_math),
      ring_(kSlots) {
  for (auto& e : done_events_)
    SPLAT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  if (submission_ == Submission::PerKernel) timer_.sync_each_stage(&syncs_);
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  if (graph_) cudaGraphExecDestroy(graph_);
  for (auto& e : done_events_) cudaEventDestroy(e);
  cudaStreamDestroy(stream_);
}

// Several ranks (a GPU communicator, dist/nccl.h): the step's gradients and loss sums are
// all-reduced on the stream before Adam, the ADC statistics before a refine decides. Every rank
// must issue the same collectives in the same order and finish every step it starts, so no graph
// capture and no abandoned steps: auto modes become chained and off, explicit ones are refused.
void CudaBackend::set_communicator(dist::Communicator& comm) {
  if (comm.size() > 1 && !comm.reduces_device_buffers())
    throw Error("the cuda backend cannot train on " + std::to_string(comm.size()) +
                " ranks: it has no gradient reduction for the " + comm.name() +
                " communicator (backend.type = \"cpu\" reduces host gradients over MPI)");
  drain();
  comm_ = &comm;
  if (comm.size() == 1) return;
  if ((submission_ == Submission::Graph && !auto_submission_) || (depth_ > 1 && !auto_pipelining_))
    throw Error("cuda backend on " + std::to_string(comm.size()) +
                " ranks: backend.submission = \"" + std::string(to_string(submission_)) +
                "\" and backend.pipelining = \"" + (depth_ > 1 ? "depth2" : "off") +
                "\" cannot carry collectives; use chained and off (or auto)");
  if (submission_ == Submission::Graph) submission_ = Submission::Chained;
  depth_ = 1;
}

Image CudaBackend::render(const Camera& cam, const RasterSettings& rs) {
  drain();
  timer_.set_active(false);  // renders are not training steps
  const ForwardState fwd = renderer_.forward(params_.in(), n_, sh_coeffs(sh_degree_), cam, rs,
                                             Sizing::Exact, nullptr, filter3d());
  timer_.set_active(true);
  Image out(cam.width, cam.height, 3);
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(out.data.data(), fwd.raster.out.image,
                                   out.data.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream_));
  syncs_.stream(stream_, "render_download");
  return out;
}

std::vector<std::pair<std::string, double>> CudaBackend::report() const {
  std::vector<std::pair<std::string, double>> r;
  for (const auto& [name, count] : syncs_.counts()) r.push_back({"sync." + name, double(count)});
  r.push_back({"alloc.scratch_growths", double(renderer_.allocations())});
  if (steps_ > 0) r.push_back({"isect.mean_per_step", isect_sum_ / double(steps_)});
  // Which execution paths ran (the parity tests read these).
  r.push_back({"engine.submission_" + std::string(to_string(submission_)), 1});
  r.push_back({"engine.steps_retired", double(steps_)});
  r.push_back({"engine.max_in_flight", double(max_in_flight_)});
  r.push_back({"engine.bounded_steps", double(bounded_steps_)});
  r.push_back({"engine.isect_overflows", double(overflows_)});
  r.push_back({"engine.graph_eager_steps", double(eager_steps_)});
  r.push_back({"engine.graph_captures", double(captures_)});
  r.push_back({"engine.graph_launches", double(launches_)});
  r.push_back({"engine.deterministic_steps", double(deterministic_steps_)});
  r.push_back({"engine.sh_adam_in_backward_steps", double(sh_adam_steps_)});
  for (const auto& [name, ms] : timer_.mean_ms()) r.push_back({"ms." + name, ms});
  return r;
}

std::unique_ptr<Backend> make_backend(const BackendConfig& cfg) {
  if (!device_available()) throw Error("backend.type = \"cuda\": no CUDA device is available");
  require_supported_device();
  return std::make_unique<CudaBackend>(cfg);
}

}  // namespace splat::cuda
