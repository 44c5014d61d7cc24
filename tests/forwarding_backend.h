#pragma once
// A backend that forwards every call to another one: tests derive from it and override the calls
// they record.
#include "engine/backend.h"

namespace splat::test {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& b) : b_(b) {}
  std::string name() const override { return b_.name(); }
  void set_images(const std::vector<const Image8*>& images) override { b_.set_images(images); }
  void set_state(const TrainState& s) override { b_.set_state(s); }
  void set_communicator(dist::Communicator& comm) override { b_.set_communicator(comm); }
  TrainState state() const override { return b_.state(); }
  std::size_t num_splats() const override { return b_.num_splats(); }
  void step(std::span<const BatchView> views, const StepSettings& s) override { b_.step(views, s); }
  void collect_losses(std::vector<StepResult>& out, bool wait) override {
    b_.collect_losses(out, wait);
  }
  RefineStats refine(RefineTick& tick) override { return b_.refine(tick); }
  Image render(const Camera& c, const RasterSettings& rs) override { return b_.render(c, rs); }
  std::uint64_t peak_memory_bytes() const override { return b_.peak_memory_bytes(); }

 private:
  Backend& b_;
};

}  // namespace splat::test
