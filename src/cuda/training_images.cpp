#include "cuda/training_images.h"

#include <utility>

#include "core/error.h"

namespace splat::cuda {

void TrainingImages::set(const std::vector<const Image8*>& images) {
  images_.clear();
  for (const Image8* img : images) {
    if (img->channels != 3 && img->channels != 4)
      throw Error("cuda backend: training images must be RGB or RGBA");
    const std::size_t counted = img->counted_pixels();
    if (counted == 0) throw Error("cuda backend: a training image's mask leaves no pixel");
    DeviceImage d;
    d.width = img->width;
    d.height = img->height;
    d.format = target_format(*img);
    d.pixels.upload(img->data);
    d.norm.upload(std::vector<float>{float(double(img->pixels()) / double(counted))});
    images_.push_back(std::move(d));
  }
  // cudaMemcpy from pageable memory may return before the copy lands.
  syncs_.device("upload");
}

void TrainingImages::stage(int i) {
  const DeviceImage& target = at(i);
  staged_.width = target.width;
  staged_.height = target.height;
  staged_.format = target.format;
  staged_.pixels.resize(target.pixels.size());
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(staged_.pixels.data(), target.pixels.data(),
                                   target.pixels.bytes(), cudaMemcpyDeviceToDevice, stream_));
  staged_.norm.resize(1);
  SPLAT_CUDA_CHECK(cudaMemcpyAsync(staged_.norm.data(), target.norm.data(), sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream_));
}

}  // namespace splat::cuda
