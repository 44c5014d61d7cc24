#pragma once
// The training images for the loss kernels as they are on the host (core/image.h Image8): 8-bit,
// RGB or RGBA, with the format the loss kernels form the target from (engine/target.h). Images
// are kept on the GPU up to a byte budget (backend.gpu_images_gb), in the order given; the rest
// stay where the caller holds them, pinned in place (cudaHostRegister, no copy), and are copied to
// the device for each step that uses them: on a copy stream, into one of two landing buffers,
// while the GPU still runs the steps queued before, then into place on the stream. A captured
// step graph reads its target from one fixed place, the staged copy.
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/image.h"
#include "cuda/buffer.h"
#include "cuda/sync_log.h"
#include "engine/target.h"

namespace splat::cuda {

struct DeviceImage {
  int width = 0, height = 0;
  TargetFormat format;
  DeviceBuffer<std::uint8_t> pixels;   // [H, W, format.channels]; empty for a streamed image
  DeviceBuffer<float> norm;            // [1]: H W / pixels the mask keeps (cuda/loss_cuda.h)
  const std::uint8_t* host = nullptr;  // a streamed image's bytes in host memory
  std::size_t bytes() const { return std::size_t(width) * height * format.channels; }
};

class TrainingImages {
 public:
  TrainingImages(cudaStream_t stream, SyncLog& syncs);
  ~TrainingImages();
  TrainingImages(const TrainingImages&) = delete;
  TrainingImages& operator=(const TrainingImages&) = delete;

  // Replaces the images; nothing in flight may read the old ones. budget_bytes: how many bytes of
  // them the GPU keeps (negative: half the device's free memory now). The host images must outlive
  // their use (Backend::set_images).
  void set(const std::vector<const Image8*>& images, std::int64_t budget_bytes);
  std::size_t count() const { return images_.size(); }
  // Image i's size and format (its pixels may be in host memory).
  const DeviceImage& at(int i) const { return images_.at(std::size_t(i)); }
  // Image i on the device for the kernels queued next on the stream: resident, or copied into the
  // streaming slot (the stream orders that copy after every earlier reader of the slot).
  const DeviceImage& fetch(int i);
  // Queues a copy of image i to the staged place.
  void stage(int i);
  const DeviceImage& staged() const { return staged_; }

  std::size_t streamed() const { return streamed_; }  // images kept in host memory
  std::size_t bytes() const;                          // device bytes held

 private:
  // Queues the copy of image i into `to` on the stream (through a landing buffer if streamed).
  void copy(int i, DeviceImage& to);
  void unpin();

  cudaStream_t stream_;
  SyncLog& syncs_;
  std::vector<DeviceImage> images_;
  std::vector<const void*> pinned_;  // host ranges this class registered
  std::size_t streamed_ = 0;
  DeviceImage slot_, staged_;
  // The host-to-device copies: each landing buffer is filled on copy_ once the stream has read
  // what it held before (released_), and the stream reads it once it has landed (landed_).
  Stream copy_;
  std::array<DeviceBuffer<std::uint8_t>, 2> landing_;
  std::array<cudaEvent_t, 2> landed_{}, released_{};
  int next_landing_ = 0;
};

}  // namespace splat::cuda
