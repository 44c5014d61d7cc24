#include "view/model_blob.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/project_cpu.h"

namespace splat::view {

namespace {

void put(std::string& out, std::size_t& at, const void* data, std::size_t n) {
  std::memcpy(out.data() + at, data, n);
  at += n;
}

// The degree-0 SH basis function, 1 / (2 sqrt(pi)) (cpu/sh.h).
constexpr double kShC0 = 0.28209479177387814;

std::uint16_t unit16(double v) {
  return std::uint16_t(std::lround(std::clamp(v, 0.0, 1.0) * 65535.0));
}

// The highest band up to `degree` with a non-zero coefficient: the bands above it add nothing to
// the colour (during training, those not yet active).
int highest_used_band(const Gaussians& g, int degree) {
  const int K = g.K();
  for (; degree > 0; --degree)
    for (std::size_t i = 0; i < g.size(); ++i)
      for (int k = sh_coeffs(degree - 1) * 3; k < sh_coeffs(degree) * 3; ++k)
        if (g.sh[i * K * 3 + k] != 0) return degree;
  return 0;
}

}  // namespace

std::uint16_t half_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);  // NaN
  const int exponent = int(x >> 23) - 127;
  if (exponent > 15) return std::uint16_t(sign | 0x7c00u);
  // The 24-bit significand loses `drop` bits: 13 for a normal half, more below 2^-14, where
  // the half is subnormal (no implicit bit, exponent field 0).
  const std::uint32_t significand = (x & 0x7fffffu) | 0x800000u;
  const bool normal = exponent >= -14;
  const int drop = normal ? 13 : 13 - 14 - exponent;
  if (drop > 24) return std::uint16_t(sign);
  std::uint32_t kept = significand >> drop;
  const std::uint32_t rest = significand & ((1u << drop) - 1), halfway = 1u << (drop - 1);
  if (rest > halfway || (rest == halfway && (kept & 1))) ++kept;
  // A carry out of the significand moves into the exponent field: the next binade, or infinity.
  const std::uint32_t bits = normal ? (std::uint32_t(exponent + 15) << 10) + kept - 0x400u : kept;
  return std::uint16_t(sign | bits);
}

std::string encode_model_blob(const Gaussians& g, std::uint32_t version, int max_sh_degree) {
  const std::size_t n = g.size();
  const int degree = highest_used_band(g, std::clamp(max_sh_degree, 0, g.sh_degree));
  const int K = g.K(), sent = degree > 0 ? sh_coeffs(degree) : 0;
  std::string out(kBlobHeaderBytes + n * (kBlobSplatBytes + sent * 3 * 2), '\0');
  std::size_t at = 0;
  const std::uint32_t header[4] = {kBlobLayout, std::uint32_t(n), version, std::uint32_t(degree)};
  put(out, at, "SPLV", 4);
  put(out, at, header, sizeof header);
  for (std::size_t i = 0; i < n; ++i) {
    const float* q = &g.quats[i * 4];
    const double qn = std::sqrt(double(q[0]) * q[0] + double(q[1]) * q[1] + double(q[2]) * q[2] +
                                double(q[3]) * q[3]);
    // A zero quaternion renders nothing in the rasterizer; here it is a zero covariance, culled.
    const Mat3<double> R =
        qn > 0 ? cpu::quat_to_rotmat(q[0] / qn, q[1] / qn, q[2] / qn, q[3] / qn) : Mat3<double>{};
    double s[3];
    for (int k = 0; k < 3; ++k) s[k] = std::exp(double(g.log_scales[i * 3 + k]));
    double cov[3][3];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) {
        cov[r][c] = 0;
        for (int k = 0; k < 3; ++k) cov[r][c] += R[r][k] * s[k] * s[k] * R[c][k];
      }
    const float packed[9] = {g.means[i * 3],   g.means[i * 3 + 1], g.means[i * 3 + 2],
                             float(cov[0][0]), float(cov[0][1]),   float(cov[0][2]),
                             float(cov[1][1]), float(cov[1][2]),   float(cov[2][2])};
    put(out, at, packed, sizeof packed);
    std::uint16_t rgba[4];
    for (int c = 0; c < 3; ++c)
      rgba[c] = unit16(std::max(0.0, 0.5 + kShC0 * g.sh[(i * K) * 3 + c]) / 2);
    rgba[3] = unit16(sigmoid(double(g.raw_opacity[i])));
    put(out, at, rgba, sizeof rgba);
  }
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < sent * 3; ++k) {
      const std::uint16_t h = half_bits(g.sh[i * K * 3 + k]);
      put(out, at, &h, sizeof h);
    }
  return out;
}

}  // namespace splat::view
