#pragma once
// A decoded image: float channels in [0, 1], row-major [height, width, channels].
#include <cstddef>
#include <vector>

namespace splat {

struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;  // 1, 3 or 4 (RGBA, straight alpha)
  std::vector<float> data;

  Image() = default;
  Image(int w, int h, int c, float fill = 0.0f)
      : width(w), height(h), channels(c), data(static_cast<std::size_t>(w) * h * c, fill) {}
  std::size_t pixels() const { return static_cast<std::size_t>(width) * height; }
  float& at(int x, int y, int c) {
    return data[(static_cast<std::size_t>(y) * width + x) * channels + c];
  }
  float at(int x, int y, int c) const {
    return data[(static_cast<std::size_t>(y) * width + x) * channels + c];
  }
};

}  // namespace splat
