#include "io/splat_format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "io/file_util.h"
#include "io/quantize.h"

namespace splat {
namespace {

static_assert(std::endian::native == std::endian::little, "records are copied byte for byte");

void put_float(unsigned char* p, float v) {
  std::memcpy(p, &v, 4);
}
float get_float(const unsigned char* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// The reference viewer draws the biggest, most opaque splats first when it streams a file.
std::vector<std::size_t> importance_order(const Gaussians& g) {
  std::vector<double> importance(g.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    importance[i] =
        std::exp(double(g.log_scales[3 * i]) + g.log_scales[3 * i + 1] + g.log_scales[3 * i + 2]) *
        sigmoid(double(g.raw_opacity[i]));
  std::vector<std::size_t> order(g.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return importance[a] > importance[b]; });
  return order;
}

}  // namespace

void write_splat(const std::string& path, const Gaussians& g) {
  const std::size_t K = std::size_t(g.K());
  std::vector<unsigned char> bytes(g.size() * kSplatRecordBytes);
  const std::vector<std::size_t> order = importance_order(g);
  for (std::size_t r = 0; r < order.size(); ++r) {
    const std::size_t i = order[r];
    unsigned char* p = bytes.data() + r * kSplatRecordBytes;
    for (int j = 0; j < 3; ++j) {
      put_float(p + 4 * j, g.means[3 * i + j]);
      put_float(p + 12 + 4 * j, std::exp(g.log_scales[3 * i + j]));
      p[24 + j] = clamped_byte((0.5 + kShC0 * g.sh[i * K * 3 + j]) * 255.0);
    }
    p[27] = clamped_byte(sigmoid(double(g.raw_opacity[i])) * 255.0);
    const auto q = unit_quat(g, i);
    for (int j = 0; j < 4; ++j) p[28 + j] = clamped_byte(q[j] * 128.0 + 128.0);
  }
  write_atomically(path, [&](std::ofstream& out) {
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  });
}

Gaussians read_splat(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                         std::istreambuf_iterator<char>());
  if (bytes.empty())
    throw input_error(path, "size", "empty file (a .splat holds 32 bytes per splat)");
  if (bytes.size() % kSplatRecordBytes != 0)
    throw input_error(path, "size",
                      std::to_string(bytes.size()) +
                          " bytes is not a whole number of 32-byte splat records (truncated?)");
  Gaussians g;
  g.sh_degree = 0;
  g.resize(bytes.size() / kSplatRecordBytes);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const unsigned char* p = bytes.data() + i * kSplatRecordBytes;
    for (int j = 0; j < 3; ++j) {
      g.means[3 * i + j] = finite_or_throw(path, i, "position", get_float(p + 4 * j));
      const float scale = get_float(p + 12 + 4 * j);
      if (!(scale > 0) || !std::isfinite(scale))
        throw input_error(path, "splat " + std::to_string(i) + ", scale",
                          std::to_string(scale) + " is not a positive finite number");
      g.log_scales[3 * i + j] = std::log(scale);
      g.sh[3 * i + j] = float((p[24 + j] / 255.0 - 0.5) / kShC0);
    }
    g.raw_opacity[i] = logit_of_byte(p[27]);
    for (int j = 0; j < 4; ++j) g.quats[4 * i + j] = float((p[28 + j] - 128.0) / 128.0);
  }
  return g;
}

}  // namespace splat
