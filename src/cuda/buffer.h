#pragma once
// Move-only RAII device buffer. Copying is deleted to prevent performance accidents: a copy of
// device memory is always an explicit call.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "cuda/check.h"

namespace splat::cuda {

// Device bytes held by all DeviceBuffers, now and at the peak (for metrics.json).
struct MemoryStats {
  std::size_t current = 0, peak = 0;
};
inline MemoryStats& memory_stats() {
  static MemoryStats s;
  return s;
}

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) { resize(n); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        capacity_(std::exchange(o.capacity_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
      capacity_ = std::exchange(o.capacity_, 0);
    }
    return *this;
  }

  // Grows geometrically; never shrinks, so a steady state allocates nothing. Contents are kept
  // only if no reallocation happens.
  void resize(std::size_t n) {
    if (n > capacity_) {
      const std::size_t cap = std::max(n, capacity_ + capacity_ / 2);
      release();
      allocate(cap);
    }
    size_ = n;
  }
  // Grows to n elements keeping the contents: when the storage moves, [0, size()) is copied on
  // `stream`. Afterwards every element from the old size up to the capacity reads zero (the model's
  // slots past the live count stay zero). Returns the previous storage when it moved, else an empty
  // buffer: keep it alive until a host wait has passed `stream`, since the queued copy reads it
  // (cudaFree promises no synchronization). Never shrinks: n below size() keeps size().
  // reserve: when it moves, the capacity to take (at least n) instead of geometric growth.
  [[nodiscard]] DeviceBuffer grow_keep(std::size_t n,
                                       cudaStream_t stream,
                                       std::size_t reserve = 0) {
    DeviceBuffer old;
    if (n > capacity_) {
      DeviceBuffer fresh;
      fresh.allocate(std::max(n, reserve ? reserve : capacity_ + capacity_ / 2));
      if (size_)
        SPLAT_CUDA_CHECK(
            cudaMemcpyAsync(fresh.ptr_, ptr_, size_ * sizeof(T), cudaMemcpyDeviceToDevice, stream));
      fresh.size_ = size_;
      old = std::exchange(*this, std::move(fresh));
    }
    zero_tail(stream);
    size_ = std::max(n, size_);
    return old;
  }
  // Zeroes [size(), capacity()).
  void zero_tail(cudaStream_t stream) {
    if (capacity_ > size_)
      SPLAT_CUDA_CHECK(cudaMemsetAsync(ptr_ + size_, 0, (capacity_ - size_) * sizeof(T), stream));
  }
  void upload(const std::vector<T>& host) {
    resize(host.size());
    if (!host.empty())
      SPLAT_CUDA_CHECK(
          cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    if (size_)
      SPLAT_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  void zero(cudaStream_t stream = nullptr) {
    if (size_) SPLAT_CUDA_CHECK(cudaMemsetAsync(ptr_, 0, size_ * sizeof(T), stream));
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  std::size_t capacity_bytes() const { return capacity_ * sizeof(T); }

 private:
  // On an empty buffer: cap elements of uninitialized storage, size 0.
  void allocate(std::size_t cap) {
    T* p = nullptr;  // ptr_ stays null if the allocation fails
    SPLAT_CUDA_CHECK(cudaMalloc(&p, cap * sizeof(T)));
    ptr_ = p;
    capacity_ = cap;
    MemoryStats& m = memory_stats();
    m.current += cap * sizeof(T);
    m.peak = std::max(m.peak, m.current);
  }
  void release() {
    if (ptr_) {
      cudaFree(ptr_);
      memory_stats().current -= capacity_ * sizeof(T);
    }
    ptr_ = nullptr;
    size_ = capacity_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

// Pinned host memory, for asynchronous readbacks.
template <class T>
class Pinned {
 public:
  explicit Pinned(std::size_t n) { SPLAT_CUDA_CHECK(cudaMallocHost(&p_, n * sizeof(T))); }
  ~Pinned() { cudaFreeHost(p_); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  T* get() { return p_; }

 private:
  T* p_ = nullptr;
};

}  // namespace splat::cuda
