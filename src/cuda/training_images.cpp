#include "cuda/training_images.h"

#include <utility>

#include "core/error.h"

namespace splat::cuda {

TrainingImages::TrainingImages(cudaStream_t stream, SyncLog& syncs)
    : stream_(stream), syncs_(syncs) {
  for (auto* events : {&landed_, &released_})
    for (cudaEvent_t& e : *events)
      SPLAT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
}

TrainingImages::~TrainingImages() {
  cudaStreamSynchronize(copy_);
  for (auto* events : {&landed_, &released_})
    for (cudaEvent_t e : *events) cudaEventDestroy(e);
  unpin();
}

void TrainingImages::set(const std::vector<const Image8*>& images, std::int64_t budget_bytes) {
  unpin();
  images_.clear();
  streamed_ = 0;
  if (budget_bytes < 0) {
    std::size_t free = 0, total = 0;
    SPLAT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    budget_bytes = std::int64_t(free / 2);
  }
  std::size_t resident = 0;
  for (const Image8* img : images) {
    if (img->channels != 3 && img->channels != 4)
      throw Error("cuda backend: training images must be RGB or RGBA");
    const std::size_t counted = img->counted_pixels();
    if (counted == 0) throw Error("cuda backend: a training image's mask leaves no pixel");
    DeviceImage d;
    d.width = img->width;
    d.height = img->height;
    d.format = target_format(*img);
    d.norm.upload(std::vector<float>{float(double(img->pixels()) / double(counted))});
    if (resident + d.bytes() <= std::size_t(budget_bytes)) {
      d.pixels.upload(img->data);
      resident += d.bytes();
    } else {
      // Pinned in place, the copies are DMA from the caller's memory; where pinning is refused,
      // a pageable copy still works, only slower.
      void* p = const_cast<std::uint8_t*>(img->data.data());
      if (cudaHostRegister(p, img->data.size(), cudaHostRegisterDefault) == cudaSuccess)
        pinned_.push_back(p);
      else
        (void)cudaGetLastError();
      d.host = img->data.data();
      ++streamed_;
    }
    images_.push_back(std::move(d));
  }
  // cudaMemcpy from pageable memory may return before the copy lands.
  syncs_.device("upload");
}

std::size_t TrainingImages::bytes() const {
  std::size_t b = 0;
  for (const DeviceImage* d : {&slot_, &staged_}) b += d->pixels.capacity_bytes();
  for (const auto& landing : landing_) b += landing.capacity_bytes();
  for (const DeviceImage& d : images_) b += d.pixels.capacity_bytes() + d.norm.capacity_bytes();
  return b;
}

const DeviceImage& TrainingImages::fetch(int i) {
  if (!at(i).host) return at(i);
  copy(i, slot_);
  return slot_;
}

void TrainingImages::stage(int i) {
  copy(i, staged_);
}

void TrainingImages::copy(int i, DeviceImage& to) {
  const DeviceImage& from = at(i);
  to.width = from.width;
  to.height = from.height;
  to.format = from.format;
  to.pixels.resize(from.bytes());
  if (from.host) {
    const std::size_t k = std::size_t(next_landing_);
    next_landing_ = 1 - next_landing_;
    DeviceBuffer<std::uint8_t>& landing = landing_[k];
    if (landing.capacity() < from.bytes()) {  // larger than any image before: free it of readers
      SPLAT_CUDA_CHECK(cudaStreamSynchronize(copy_));
      syncs_.stream(stream_, "landing_growth");
    }
    landing.resize(from.bytes());
    SPLAT_CUDA_CHECK(cudaStreamWaitEvent(copy_, released_[k]));
    SPLAT_CUDA_CHECK(
        cudaMemcpyAsync(landing.data(), from.host, from.bytes(), cudaMemcpyHostToDevice, copy_));
    SPLAT_CUDA_CHECK(cudaEventRecord(landed_[k], copy_));
    SPLAT_CUDA_CHECK(cudaStreamWaitEvent(stream_, landed_[k]));
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(to.pixels.data(), landing.data(), from.bytes(),
                                     cudaMemcpyDeviceToDevice, stream_));
    SPLAT_CUDA_CHECK(cudaEventRecord(released_[k], stream_));
  } else {
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(to.pixels.data(), from.pixels.data(), from.bytes(),
                                     cudaMemcpyDeviceToDevice, stream_));
  }
  to.norm.resize(1);
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(to.norm.data(), from.norm.data(), sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream_));
}

// Nothing in flight may read the ranges: set() is called with the step engine drained, and the
// destructor runs after the backend has synchronized its stream.
void TrainingImages::unpin() {
  for (const void* p : pinned_) cudaHostUnregister(const_cast<void*>(p));
  pinned_.clear();
}

}  // namespace splat::cuda
