#pragma once
// The CUDA backend's refine context (engine/refine.h): what a refine tick's run_cuda works on, and
// the registry where ticks keep their device scratch and pinned host memory from one tick to the
// next. A tick runs with nothing in flight that reads the model (the backend drains the step
// engine first), so it may replace the model's buffers; one that keeps every buffer and the count
// leaves the captured step graph valid.
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <memory>
#include <typeindex>

#include "cuda/device_model.h"
#include "cuda/sync_log.h"

namespace splat::dist {
class Communicator;
}

namespace splat::cuda {

class Renderer;
class TrainingImages;

// One object of each type a tick asks for, made on first use and kept with the backend; a type
// says what it holds with bytes() (the report's memory.refine_scratch_mib).
class RefineScratch {
 public:
  template <class T>
  T& get() {
    std::unique_ptr<Entry>& e = entries_[std::type_index(typeid(T))];
    if (!e) e = std::make_unique<Holder<T>>();
    return static_cast<Holder<T>&>(*e).value;
  }
  std::size_t bytes() const {
    std::size_t b = 0;
    for (const auto& [type, e] : entries_) b += e->bytes();
    return b;
  }

 private:
  struct Entry {
    virtual ~Entry() = default;
    virtual std::size_t bytes() const = 0;
  };
  template <class T>
  struct Holder final : Entry {
    T value;
    std::size_t bytes() const override { return value.bytes(); }
  };
  std::map<std::type_index, std::unique_ptr<Entry>> entries_;
};

struct RefineContext {
  // The model: parameters, Adam moments, ADC statistics (model.grad2d, model.vis_count: per rank
  // until a tick all-reduces them), the count (model.n) and model.generation, which a tick that
  // changes a buffer or the count increments (the captured step graph is then stale).
  DeviceModel& model;
  cudaStream_t stream;       // every kernel and copy of the tick
  SyncLog& syncs;            // its host waits, each named (cuda/sync_log.h)
  RefineScratch& scratch;    // what it keeps between ticks
  dist::Communicator& comm;  // the ranks of a data-parallel job
  // A tick that scores training views (FastGS-style) renders the model with
  // renderer->forward(model.params.in(), model.n, sh_coeffs(model.sh_degree), camera, settings,
  // Sizing::Exact, nullptr, model.filter3d()) (cuda/renderer.h) and compares the render with the
  // training images (cuda/training_images.h), on the same stream. Null in a context made without
  // a backend (the device-part tests).
  Renderer* renderer = nullptr;
  TrainingImages* images = nullptr;
};

}  // namespace splat::cuda
