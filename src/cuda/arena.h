#pragma once
// Scratch memory grouped by what it indexes (per splat, per intersection, per tile, per pixel).
// Each group is carved from one device allocation whose size and layout come from the same
// carve() code, as diff-gaussian-rasterization's fromChunk does; it grows geometrically and never
// shrinks, so a steady-state step allocates nothing.
#include <cstddef>

#include "cuda/buffer.h"

namespace splat::cuda {

class Carver {
 public:
  explicit Carver(char* base) : base_(base) {}
  template <class T>
  T* take(std::size_t count) {
    offset_ = (offset_ + kAlign - 1) / kAlign * kAlign;
    T* p = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    offset_ += count * sizeof(T);
    return p;
  }
  std::size_t bytes() const { return offset_; }

 private:
  static constexpr std::size_t kAlign = 256;  // CUB temp storage and 16-byte vector loads
  char* base_;
  std::size_t offset_ = 0;
};

// Layout: a struct of typed pointers with `void carve(Carver&, const Size&)`.
template <class Layout, class Size>
class ScratchGroup {
 public:
  // Makes room for `size` and (re)assigns the pointers. Allocates only when the layout grows.
  Layout& ensure(const Size& size) {
    Carver measure(nullptr);
    layout_.carve(measure, size);
    const bool grows = measure.bytes() > memory_.size();
    memory_.resize(std::max(measure.bytes(), memory_.size()));
    if (grows) ++allocations_;
    Carver assign(memory_.data());
    layout_.carve(assign, size);
    return layout_;
  }
  Layout& get() { return layout_; }
  int allocations() const { return allocations_; }
  std::size_t bytes() const { return memory_.capacity(); }
  // Test hook: every byte 0xFF (NaN floats, huge counts), to prove nothing reads stale scratch.
  void poison(cudaStream_t stream) {
    if (memory_.size())
      SPLAT_CUDA_CHECK(cudaMemsetAsync(memory_.data(), 0xFF, memory_.size(), stream));
  }

 private:
  Layout layout_{};
  DeviceBuffer<char> memory_;
  int allocations_ = 0;
};

}  // namespace splat::cuda
