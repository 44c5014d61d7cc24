#include "io/spz.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "io/file_util.h"
#include "io/quantize.h"

namespace splat {
namespace {

constexpr std::size_t kHeaderBytes = 16;
constexpr std::uint8_t kFlagAntialiased = 0x1;
constexpr std::uint8_t kFlagHasExtensions = 0x2;
constexpr int kMaxFractionalBits = 12;  // the reference's choice: ~0.25 mm at metre scale
constexpr double kColorScale = 0.15;
constexpr double kSqrt1_2 = 0.707106781186547524401;

// RDF (3DGS) <-> RUB (spz): a half turn about x. Its sign on positions, on the quaternion's
// x y z, and on each SH coefficient after DC (the basis functions' parity in y and z).
constexpr std::array<double, 3> kFlipP = {1, -1, -1};
constexpr std::array<double, 3> kFlipQ = {1, -1, -1};
constexpr std::array<double, 15> kFlipSh = {-1, -1, 1, -1, 1, 1, -1, 1, -1, 1, -1, -1, 1, -1, 1};

std::size_t rotation_bytes(std::uint32_t version) {
  return version >= 3 ? 4 : 3;
}

std::size_t bytes_per_point(std::uint32_t version, int sh_degree) {
  return 9 + 1 + 3 + 3 + rotation_bytes(version) + std::size_t(sh_coeffs(sh_degree) - 1) * 3;
}

void put_u32(std::vector<std::uint8_t>& out, std::size_t at, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) out[at + b] = std::uint8_t(v >> (8 * b));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | std::uint32_t(p[3]) << 24;
}

// Quantizes to 8 bits, then to the centre of a bucket of `bucket` values (spz's quantizeSH).
std::uint8_t quantize_sh(double x, int bucket) {
  int q = int(std::round(std::clamp(x, -2.0, 2.0) * 128.0) + 128.0);  // clamped: no int overflow
  q = (q + bucket / 2) / bucket * bucket;
  return std::uint8_t(std::clamp(q, 0, 255));
}

// The largest fractionalBits (at most 12) at which every coordinate fits 24 signed bits.
int fractional_bits_for(const std::string& path, const Gaussians& g) {
  double extent = 0;
  for (float v : g.means) extent = std::max(extent, double(std::fabs(v)));
  for (int bits = kMaxFractionalBits; bits >= 0; --bits)
    if (std::round(extent * double(1 << bits)) <= double((1 << 23) - 1)) return bits;
  throw input_error(
      path, "positions",
      "a coordinate of " + std::to_string(extent) + " does not fit spz's 24-bit fixed point");
}

// q in spz order (x, y, z, w), unit length.
void pack_smallest_three(std::uint8_t* r, const std::array<double, 4>& q) {
  int largest = 0;
  for (int i = 1; i < 4; ++i)
    if (std::fabs(q[i]) > std::fabs(q[largest])) largest = i;
  const bool negate = q[largest] < 0;  // -q is the same rotation, so the largest is stored positive
  std::uint32_t comp = std::uint32_t(largest);
  for (int i = 0; i < 4; ++i) {
    if (i == largest) continue;
    const std::uint32_t negbit = (q[i] < 0) != negate;
    // At most 511: a rounding above 1/sqrt(2) must not carry into the sign bit.
    const std::uint32_t mag =
        std::min<std::uint32_t>(511, std::uint32_t(511.0 * (std::fabs(q[i]) / kSqrt1_2) + 0.5));
    comp = (comp << 10) | (negbit << 9) | mag;
  }
  for (int b = 0; b < 4; ++b) r[b] = std::uint8_t(comp >> (8 * b));
}

std::array<double, 4> unpack_smallest_three(const std::uint8_t* r) {
  std::uint32_t comp = get_u32(r);
  const int largest = int(comp >> 30);
  std::array<double, 4> q{};
  double sum = 0;
  for (int i = 3; i >= 0; --i) {
    if (i == largest) continue;
    const std::uint32_t mag = comp & 511, negbit = (comp >> 9) & 1;
    comp >>= 10;
    q[i] = kSqrt1_2 * double(mag) / 511.0 * (negbit ? -1 : 1);
    sum += q[i] * q[i];
  }
  q[largest] = std::sqrt(std::max(0.0, 1.0 - sum));
  return q;
}

void pack_first_three(std::uint8_t* r, const std::array<double, 4>& q) {
  const double s = q[3] < 0 ? -127.5 : 127.5;
  for (int i = 0; i < 3; ++i) r[i] = round_to_byte(q[i] * s + 127.5);
}

std::array<double, 4> unpack_first_three(const std::uint8_t* r) {
  std::array<double, 4> q;
  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    q[i] = r[i] / 127.5 - 1.0;
    sum += q[i] * q[i];
  }
  q[3] = std::sqrt(std::max(0.0, 1.0 - sum));
  return q;
}

std::vector<std::uint8_t> gzip(const std::string& path, const std::vector<std::uint8_t>& data) {
  z_stream s{};
  if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    throw input_error(path, "gzip", "cannot start the compressor");
  std::vector<std::uint8_t> out(deflateBound(&s, uLong(data.size())));
  s.next_in = const_cast<Bytef*>(data.data());
  s.avail_in = uInt(data.size());
  s.next_out = out.data();
  s.avail_out = uInt(out.size());
  const int rc = deflate(&s, Z_FINISH);
  out.resize(s.total_out);
  deflateEnd(&s);
  if (rc != Z_STREAM_END) throw input_error(path, "gzip", "compression failed");
  return out;
}

std::vector<std::uint8_t> gunzip(const std::string& path, const std::vector<std::uint8_t>& data) {
  if (data.size() < 2 || data[0] != 0x1f || data[1] != 0x8b) {
    if (data.size() >= 4 && get_u32(data.data()) == kSpzMagic)
      throw input_error(
          path, "version",
          "an spz version 4 file (zstd container); splat reads the gzip versions 2 and 3");
    throw input_error(path, "gzip", "not a gzip stream (an .spz file starts with the bytes 1f 8b)");
  }
  z_stream s{};
  if (inflateInit2(&s, 16 + MAX_WBITS) != Z_OK)
    throw input_error(path, "gzip", "cannot start the decompressor");
  s.next_in = const_cast<Bytef*>(data.data());
  s.avail_in = uInt(data.size());
  std::vector<std::uint8_t> out;
  std::array<std::uint8_t, 1 << 16> buf;
  int rc = Z_OK;
  while (rc == Z_OK) {
    s.next_out = buf.data();
    s.avail_out = uInt(buf.size());
    rc = inflate(&s, Z_NO_FLUSH);
    out.insert(out.end(), buf.data(), buf.data() + (buf.size() - s.avail_out));
    if (rc == Z_BUF_ERROR && s.avail_in == 0) break;  // the input ended before the stream did
  }
  inflateEnd(&s);
  if (rc != Z_STREAM_END)
    throw input_error(path, "gzip",
                      rc == Z_BUF_ERROR ? "truncated gzip stream" : "corrupt gzip stream");
  return out;
}

// The uncompressed stream of g; `path` names the file in errors.
std::vector<std::uint8_t> encode(const std::string& path,
                                 const Gaussians& g,
                                 std::uint32_t version) {
  if (g.sh_degree < 0 || g.sh_degree > 3)
    throw input_error(path, "sh_degree", "spz holds degrees 0..3 here");
  const std::size_t n = g.size(), K = std::size_t(g.K()), rest = K - 1;
  const int bits = fractional_bits_for(path, g);
  std::vector<std::uint8_t> out(kHeaderBytes + n * bytes_per_point(version, g.sh_degree));
  put_u32(out, 0, kSpzMagic);
  put_u32(out, 4, version);
  put_u32(out, 8, std::uint32_t(n));
  out[12] = std::uint8_t(g.sh_degree);
  out[13] = std::uint8_t(bits);
  out[14] = 0;  // flags: the model is stored without Mip-Splatting's compensation
  out[15] = 0;
  std::uint8_t* positions = out.data() + kHeaderBytes;
  std::uint8_t* alphas = positions + n * 9;
  std::uint8_t* colors = alphas + n;
  std::uint8_t* scales = colors + n * 3;
  std::uint8_t* rotations = scales + n * 3;
  std::uint8_t* sh = rotations + n * rotation_bytes(version);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      const auto fixed =
          std::int32_t(std::round(g.means[3 * i + j] * kFlipP[j] * double(1 << bits)));
      for (int b = 0; b < 3; ++b) positions[(3 * i + j) * 3 + b] = std::uint8_t(fixed >> (8 * b));
      colors[3 * i + j] = round_to_byte(g.sh[i * K * 3 + j] * (kColorScale * 255.0) + 0.5 * 255.0);
      scales[3 * i + j] = round_to_byte((g.log_scales[3 * i + j] + 10.0) * 16.0);
    }
    alphas[i] = round_to_byte(sigmoid(double(g.raw_opacity[i])) * 255.0);
    const auto wxyz = unit_quat(g, i);
    const std::array<double, 4> q = {wxyz[1] * kFlipQ[0], wxyz[2] * kFlipQ[1], wxyz[3] * kFlipQ[2],
                                     wxyz[0]};
    if (version >= 3)
      pack_smallest_three(rotations + 4 * i, q);
    else
      pack_first_three(rotations + 3 * i, q);
    for (std::size_t k = 1; k < K; ++k)
      for (std::size_t c = 0; c < 3; ++c)
        sh[(i * rest + (k - 1)) * 3 + c] =
            quantize_sh(g.sh[(i * K + k) * 3 + c] * kFlipSh[k - 1], k <= 3 ? 8 : 16);
  }
  return out;
}

}  // namespace

std::vector<std::uint8_t> spz_stream(const Gaussians& g, std::uint32_t version) {
  return encode("spz stream", g, version);
}

void write_spz(const std::string& path, const Gaussians& g) {
  const std::vector<std::uint8_t> bytes = gzip(path, encode(path, g, kSpzVersion));
  write_atomically(path, [&](std::ofstream& out) {
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  });
}

Gaussians parse_spz_stream(const std::string& path, const std::vector<std::uint8_t>& s) {
  if (s.size() < kHeaderBytes)
    throw input_error(path, "header",
                      "truncated: " + std::to_string(s.size()) + " bytes, the header is 16");
  const std::uint32_t magic = get_u32(s.data()), version = get_u32(s.data() + 4),
                      n = get_u32(s.data() + 8);
  const int degree = s[12], bits = s[13], flags = s[14];
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", magic);
  if (magic != kSpzMagic)
    throw input_error(path, "magic", std::string(hex) + ", expected 0x5053474e (\"NGSP\")");
  if (version != 2 && version != 3)
    throw input_error(path, "version",
                      std::to_string(version) + " is not supported (splat reads versions 2 and 3)");
  if (degree > 3)
    throw input_error(path, "shDegree", std::to_string(degree) + " (splat reads SH degrees 0..3)");
  if (bits > 23)
    throw input_error(path, "fractionalBits",
                      std::to_string(bits) + " (at most 23 in 24-bit positions)");
  const std::size_t expected = kHeaderBytes + std::size_t(n) * bytes_per_point(version, degree);
  const bool has_extensions = flags & kFlagHasExtensions;  // trailing records splat does not use
  if (s.size() < expected || (s.size() > expected && !has_extensions))
    throw input_error(path, "numPoints",
                      std::to_string(n) + " points of SH degree " + std::to_string(degree) +
                          " need " + std::to_string(expected) + " bytes, the stream has " +
                          std::to_string(s.size()) + (s.size() < expected ? " (truncated)" : ""));
  if (flags & kFlagAntialiased)
    std::fprintf(stderr,
                 "warning: %s: flags: antialiased (Mip-Splatting) splats; rendered without the "
                 "compensation\n",
                 path.c_str());
  Gaussians g;
  g.sh_degree = degree;
  g.resize(n);
  const std::size_t K = std::size_t(g.K()), rest = K - 1;
  const std::uint8_t* positions = s.data() + kHeaderBytes;
  const std::uint8_t* alphas = positions + std::size_t(n) * 9;
  const std::uint8_t* colors = alphas + n;
  const std::uint8_t* scales = colors + std::size_t(n) * 3;
  const std::uint8_t* rotations = scales + std::size_t(n) * 3;
  const std::uint8_t* sh = rotations + std::size_t(n) * rotation_bytes(version);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      const std::uint8_t* p = positions + (3 * i + j) * 3;
      std::int32_t fixed = p[0] | p[1] << 8 | p[2] << 16;
      if (fixed & 0x800000) fixed -= 1 << 24;  // sign extension
      g.means[3 * i + j] = float(double(fixed) / double(1 << bits) * kFlipP[j]);
      g.sh[i * K * 3 + j] = float((colors[3 * i + j] / 255.0 - 0.5) / kColorScale);
      g.log_scales[3 * i + j] = float(scales[3 * i + j] / 16.0 - 10.0);
    }
    g.raw_opacity[i] = logit_of_byte(alphas[i]);
    const auto q = version >= 3 ? unpack_smallest_three(rotations + 4 * i)
                                : unpack_first_three(rotations + 3 * i);
    g.quats[4 * i] = float(q[3]);
    for (int j = 0; j < 3; ++j) g.quats[4 * i + 1 + j] = float(q[j] * kFlipQ[j]);
    for (std::size_t k = 1; k < K; ++k)
      for (std::size_t c = 0; c < 3; ++c)
        g.sh[(i * K + k) * 3 + c] =
            float((sh[(i * rest + (k - 1)) * 3 + c] - 128.0) / 128.0 * kFlipSh[k - 1]);
  }
  return g;
}

Gaussians read_spz(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  return parse_spz_stream(path, gunzip(path, bytes));
}

}  // namespace splat
