#pragma once
// The training images on the device as they are on the host (core/image.h Image8): 8-bit, RGB or
// RGBA, with the format the loss kernels form the target from (render/target.h). A captured step
// graph reads its target from one fixed place, the staged copy.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/image.h"
#include "cuda/buffer.h"
#include "cuda/sync.h"
#include "render/target.h"

namespace splat::cuda {

struct DeviceImage {
  int width = 0, height = 0;
  TargetFormat format;
  DeviceBuffer<std::uint8_t> pixels;  // [H, W, format.channels]
  DeviceBuffer<float> norm;           // [1]: H W / pixels the mask keeps (cuda/loss.h)
};

class TrainingImages {
 public:
  TrainingImages(cudaStream_t stream, SyncLog& syncs) : stream_(stream), syncs_(syncs) {}

  // Replaces the images; nothing in flight may read the old ones.
  void set(const std::vector<const Image8*>& images);
  const DeviceImage& at(int i) const { return images_.at(std::size_t(i)); }
  // Queues a copy of image i to the staged place.
  void stage(int i);
  const DeviceImage& staged() const { return staged_; }

 private:
  cudaStream_t stream_;
  SyncLog& syncs_;
  std::vector<DeviceImage> images_;
  DeviceImage staged_;
};

}  // namespace splat::cuda
