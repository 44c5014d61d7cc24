#pragma once
// Host synchronizations are named, counted functions, never hidden inside a helper.
#include <cuda_runtime.h>

#include <map>
#include <string>

#include "cuda/check.h"

namespace splat::cuda {

class SyncLog {
 public:
  void stream(cudaStream_t s, const char* why) {
    SPLAT_CUDA_CHECK(cudaStreamSynchronize(s));
    ++counts_[why];
  }
  void event(cudaEvent_t e, const char* why) {
    SPLAT_CUDA_CHECK(cudaEventSynchronize(e));
    ++counts_[why];
  }
  void device(const char* why) {
    SPLAT_CUDA_CHECK(cudaDeviceSynchronize());
    ++counts_[why];
  }
  const std::map<std::string, long>& counts() const { return counts_; }

 private:
  std::map<std::string, long> counts_;
};

// A non-blocking stream, destroyed with its owner once everything queued on it has run.
class Stream {
 public:
  Stream() { SPLAT_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    cudaStreamSynchronize(s_);
    cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace splat::cuda
