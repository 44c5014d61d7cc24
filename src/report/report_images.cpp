#include "report/report_images.h"

#include <algorithm>
#include <cmath>

#include "core/base64.h"
#include "core/error.h"
#include "io/image_io.h"

namespace splat {
namespace {

// As the PNG encoder sees a sample: NaN becomes 0.
float clamp01(float v) {
  return !(v > 0.0f) ? 0.0f : std::min(v, 1.0f);
}

}  // namespace

Image display_rgb(const Image& img) {
  if (img.channels == 4) return composite_on(img, {1.0f, 1.0f, 1.0f});
  if (img.channels != 1) return img;
  Image out(img.width, img.height, 3);
  for (std::size_t i = 0; i < img.pixels(); ++i) {
    for (int c = 0; c < 3; ++c) out.data[3 * i + c] = img.data[i];
  }
  return out;
}

Image abs_error(const Image& truth, const Image& render) {
  if (truth.width != render.width || truth.height != render.height || truth.channels != 3 ||
      render.channels != 3) {
    throw Error("abs_error: truth and render must be RGB images of the same size");
  }
  Image err(truth.width, truth.height, 1);
  for (std::size_t i = 0; i < err.pixels(); ++i) {
    float sum = 0;
    // The render is clamped as the metrics clamp it: values beyond [0, 1] are never shown.
    for (int c = 0; c < 3; ++c) {
      sum += std::abs(clamp01(render.data[3 * i + c]) - clamp01(truth.data[3 * i + c]));
    }
    err.data[i] = sum / 3.0f;
  }
  return err;
}

std::array<float, 3> inferno(float t) {
  static constexpr unsigned kStops[] = {0x000004, 0x160b39, 0x420a68, 0x6a176e, 0x932667, 0xbc3754,
                                        0xdd513a, 0xf37819, 0xfca50a, 0xf6d746, 0xfcffa4};
  constexpr int kLast = int(std::size(kStops)) - 1;
  const float s = std::clamp(std::isnan(t) ? 0.0f : t, 0.0f, 1.0f) * kLast;
  const int i = std::min(int(s), kLast - 1);
  const float f = s - float(i);
  std::array<float, 3> rgb;
  for (int c = 0; c < 3; ++c) {
    const int shift = 16 - 8 * c;
    const float a = float((kStops[i] >> shift) & 0xff), b = float((kStops[i + 1] >> shift) & 0xff);
    rgb[c] = (a + (b - a) * f) / 255.0f;
  }
  return rgb;
}

std::vector<std::uint8_t> heat_map_png(const Image& error, float scale) {
  std::vector<std::array<float, 3>> palette(256);
  for (int i = 0; i < 256; ++i) palette[i] = inferno(float(i) / 255);
  std::vector<std::uint8_t> index(error.pixels());
  for (std::size_t i = 0; i < index.size(); ++i) {
    const float t = error.data[i] / scale;
    index[i] = !(t > 0) ? 0 : t >= 1 ? 255 : std::uint8_t(t * 255 + 0.5f);
  }
  return encode_png_indexed(index, error.width, error.height, palette);
}

Image fit_within(const Image& img, int max_side) {
  const int longest = std::max(img.width, img.height);
  if (longest <= max_side) return img;
  return downscale(img, (longest + max_side - 1) / max_side);
}

float heat_scale(std::vector<float> values, double q) {
  float v = 0;
  if (!values.empty()) {
    const auto k = values.begin() + std::ptrdiff_t(q * double(values.size() - 1));
    std::nth_element(values.begin(), k, values.end());
    v = *k;
  }
  for (const float s : {0.01f, 0.02f, 0.05f, 0.1f, 0.2f, 0.5f}) {
    if (v <= s) return s;
  }
  return 1.0f;
}

std::string png_data_uri(const std::vector<std::uint8_t>& png) {
  return "data:image/png;base64," + base64_encode(png);
}

}  // namespace splat
