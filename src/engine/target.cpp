#include "engine/target.h"

namespace splat {

Image target_image(const Image8& img) {
  const TargetFormat f = target_format(img);
  Image out(img.width, img.height, 3);
  for (std::size_t i = 0; i < img.pixels(); ++i)
    for (int c = 0; c < 3; ++c)
      out.data[3 * i + c] = target_sample(f, &img.data[i * std::size_t(img.channels)], c);
  return out;
}

std::vector<float> target_weights(const Image8& img) {
  const TargetFormat f = target_format(img);
  std::vector<float> w(img.pixels());
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = target_weight(f, &img.data[i * std::size_t(img.channels)]);
  return w;
}

}  // namespace splat
