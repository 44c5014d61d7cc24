#pragma once
// Images in memory: float channels for renders and evaluation, 8-bit samples for the training
// images (what the loss compares against), which are stored as decoded to keep a capture's
// photographs small on the host and on the GPU.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace splat {

// A decoded image: float channels in [0, 1], row-major [height, width, channels].
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

// What the fourth byte of an RGBA training image means.
enum class AlphaUse {
  composite,  // straight alpha: the target is RGB over `background`, every pixel counts
  mask,       // a binary loss mask (0: ignored, 255: counts); the target is the RGB bytes
};

// A training image as stored: 8-bit samples, row-major [height, width, channels], channels 3
// (RGB, every pixel counts) or 4. A sample k means k / 255. The float target the loss reads is
// formed where it is read (cpu backend, cuda loss kernel) by engine/target.h.
struct Image8 {
  int width = 0;
  int height = 0;
  int channels = 0;  // 3 or 4
  std::vector<std::uint8_t> data;
  AlphaUse alpha = AlphaUse::composite;               // meaningful when channels == 4
  std::array<float, 3> background{1.0f, 1.0f, 1.0f};  // AlphaUse::composite

  Image8() = default;
  Image8(int w, int h, int c)
      : width(w), height(h), channels(c), data(static_cast<std::size_t>(w) * h * c, 0) {}
  std::size_t pixels() const { return static_cast<std::size_t>(width) * height; }
  bool masked() const { return channels == 4 && alpha == AlphaUse::mask; }
  // Pixels the loss counts: all of them, or the mask's 255s.
  std::size_t counted_pixels() const {
    if (!masked()) return pixels();
    std::size_t n = 0;
    for (std::size_t i = 0; i < pixels(); ++i) n += data[4 * i + 3] != 0;
    return n;
  }
};

}  // namespace splat
