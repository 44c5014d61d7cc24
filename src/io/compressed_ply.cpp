#include "io/compressed_ply.h"

#include <algorithm>
#include <array>
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
#include "io/ply_header.h"
#include "io/quantize.h"

namespace splat {
namespace {

static_assert(std::endian::native == std::endian::little, "bodies are copied byte for byte");

constexpr const char* kChunkProps[] = {
    "min_x",       "min_y",       "min_z",       "max_x",       "max_y",       "max_z",
    "min_scale_x", "min_scale_y", "min_scale_z", "max_scale_x", "max_scale_y", "max_scale_z",
    "min_r",       "min_g",       "min_b",       "max_r",       "max_g",       "max_b"};
constexpr std::size_t kGeometryChunkProps = 12;  // the color bounds after them are optional
constexpr const char* kVertexProps[] = {"packed_position", "packed_rotation", "packed_scale",
                                        "packed_color"};
constexpr double kMaxLogScale =
    20;  // bounds are clamped: a collapsed splat's log scale can be huge

// ---- packing (splat-transform's CompressedChunk) ----

std::uint32_t pack_unorm(double v, int bits) {
  const double t = double((1u << bits) - 1);
  return std::uint32_t(std::clamp(std::floor(v * t + 0.5), 0.0, t));
}
double unpack_unorm(std::uint32_t v, int bits) {
  const std::uint32_t t = (1u << bits) - 1;
  return double(v & t) / double(t);
}
// Where x lies in [lo, hi], in [0, 1].
double normalize(double x, double lo, double hi) {
  if (x <= lo) return 0;
  if (x >= hi) return 1;
  return hi - lo < 1e-5 ? 0 : (x - lo) / (hi - lo);
}
std::uint32_t pack_11_10_11(double x, double y, double z) {
  return pack_unorm(x, 11) << 21 | pack_unorm(y, 10) << 11 | pack_unorm(z, 11);
}
std::array<double, 3> unpack_11_10_11(std::uint32_t v) {
  return {unpack_unorm(v >> 21, 11), unpack_unorm(v >> 11, 10), unpack_unorm(v, 11)};
}

std::uint32_t pack_rotation(std::array<double, 4> q) {
  int largest = 0;
  for (int i = 1; i < 4; ++i)
    if (std::fabs(q[i]) > std::fabs(q[largest])) largest = i;
  if (q[largest] < 0)
    for (double& v : q) v = -v;
  const double norm = std::sqrt(2.0) * 0.5;
  std::uint32_t r = std::uint32_t(largest);
  for (int i = 0; i < 4; ++i)
    if (i != largest) r = r << 10 | pack_unorm(q[i] * norm + 0.5, 10);
  return r;
}
std::array<double, 4> unpack_rotation(std::uint32_t v) {
  const double norm = 1.0 / (std::sqrt(2.0) * 0.5);
  const double a = (unpack_unorm(v >> 20, 10) - 0.5) * norm,
               b = (unpack_unorm(v >> 10, 10) - 0.5) * norm, c = (unpack_unorm(v, 10) - 0.5) * norm;
  const double m = std::sqrt(std::max(0.0, 1.0 - (a * a + b * b + c * c)));
  switch (v >> 30) {
    case 0:
      return {m, a, b, c};
    case 1:
      return {a, m, b, c};
    case 2:
      return {a, b, m, c};
    default:
      return {a, b, c, m};
  }
}

std::uint8_t quantize_sh(double v) {
  return std::uint8_t(std::clamp(std::trunc((v / 8 + 0.5) * 256), 0.0, 255.0));
}
double unquantize_sh(std::uint8_t b) {
  const double n = b == 0 ? 0 : b == 255 ? 1 : (b + 0.5) / 256;
  return (n - 0.5) * 8;
}

// Spreads the low 10 bits of v to every third bit.
std::uint32_t spread3(std::uint32_t v) {
  v &= 0x3ff;
  v = (v | v << 16) & 0x030000ff;
  v = (v | v << 8) & 0x0300f00f;
  v = (v | v << 4) & 0x030c30c3;
  v = (v | v << 2) & 0x09249249;
  return v;
}

// Splat indices in Morton (z-curve) order of their positions on a 1024^3 grid over the bounds.
std::vector<std::size_t> morton_order(const Gaussians& g) {
  std::array<double, 3> lo{}, hi{};
  for (int j = 0; j < 3; ++j) {
    lo[j] = hi[j] = g.size() ? g.means[j] : 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      lo[j] = std::min(lo[j], double(g.means[3 * i + j]));
      hi[j] = std::max(hi[j], double(g.means[3 * i + j]));
    }
  }
  std::vector<std::uint32_t> code(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    std::uint32_t c = 0;
    for (int j = 0; j < 3; ++j) {
      const double t = hi[j] > lo[j] ? (g.means[3 * i + j] - lo[j]) / (hi[j] - lo[j]) : 0.0;
      c |= spread3(std::uint32_t(std::clamp(t * 1024.0, 0.0, 1023.0))) << (2 - j);
    }
    code[i] = c;
  }
  std::vector<std::size_t> order(g.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return code[a] < code[b]; });
  return order;
}

// What a chunk packs, per splat in file order: position, log scale, color (float, as the
// reference rounds them into a Float32Array before taking bounds).
struct Rows {
  std::vector<std::array<float, 3>> pos, scale, color;
};

std::array<float, 18> chunk_bounds(const Rows& r, std::size_t first, std::size_t last) {
  std::array<float, 18> b;
  for (int j = 0; j < 3; ++j) {
    float plo = r.pos[first][j], phi = plo, slo = r.scale[first][j], shi = slo,
          clo = r.color[first][j], chi = clo;
    for (std::size_t i = first; i < last; ++i) {
      plo = std::min(plo, r.pos[i][j]);
      phi = std::max(phi, r.pos[i][j]);
      slo = std::min(slo, r.scale[i][j]);
      shi = std::max(shi, r.scale[i][j]);
      clo = std::min(clo, r.color[i][j]);
      chi = std::max(chi, r.color[i][j]);
    }
    b[j] = plo;
    b[3 + j] = phi;
    b[6 + j] = float(std::clamp(double(slo), -kMaxLogScale, kMaxLogScale));
    b[9 + j] = float(std::clamp(double(shi), -kMaxLogScale, kMaxLogScale));
    b[12 + j] = clo;
    b[15 + j] = chi;
  }
  return b;
}

// ---- reading ----

// The property `name` of element e, which must have type `type`.
const PlyProperty& require(const std::string& path,
                           const PlyElement& e,
                           const std::string& name,
                           ScalarType type,
                           const char* type_name) {
  const PlyProperty* p = e.find(name);
  if (!p) throw input_error(path, "element " + e.name + ", property " + name, "missing");
  if (p->type != type)
    throw input_error(path, "element " + e.name + ", property " + name,
                      std::string("must be ") + type_name);
  return *p;
}

template <class T>
T field(const std::vector<char>& body, std::size_t row_start, const PlyProperty& p) {
  T v;
  std::memcpy(&v, body.data() + row_start + p.offset, sizeof v);
  return v;
}

}  // namespace

void write_compressed_ply(const std::string& path, const Gaussians& g) {
  const std::size_t n = g.size(), K = std::size_t(g.K()), rest = (K - 1) * 3;
  const std::size_t chunks = (n + kCompressedChunk - 1) / kCompressedChunk;
  const std::vector<std::size_t> order = morton_order(g);
  Rows r;
  for (const std::size_t i : order) {
    std::array<float, 3> p, s, c;
    for (int j = 0; j < 3; ++j) {
      p[j] = g.means[3 * i + j];
      s[j] = g.log_scales[3 * i + j];
      c[j] = float(g.sh[i * K * 3 + j] * kShC0 + 0.5);
    }
    r.pos.push_back(p);
    r.scale.push_back(s);
    r.color.push_back(c);
  }
  std::vector<float> chunk_data(chunks * 18);
  std::vector<std::uint32_t> packed(n * 4);
  std::vector<std::uint8_t> sh(n * rest);
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t first = c * kCompressedChunk, last = std::min(n, first + kCompressedChunk);
    const std::array<float, 18> b = chunk_bounds(r, first, last);
    std::copy(b.begin(), b.end(), chunk_data.begin() + c * 18);
    for (std::size_t k = first; k < last; ++k) {
      const std::size_t i = order[k];
      std::array<double, 9> t;  // position, scale, color within the chunk's bounds
      for (int j = 0; j < 3; ++j) {
        t[j] = normalize(r.pos[k][j], b[j], b[3 + j]);
        t[3 + j] = normalize(r.scale[k][j], b[6 + j], b[9 + j]);
        t[6 + j] = normalize(r.color[k][j], b[12 + j], b[15 + j]);
      }
      packed[4 * k + 0] = pack_11_10_11(t[0], t[1], t[2]);
      packed[4 * k + 1] = pack_rotation(unit_quat(g, i));
      packed[4 * k + 2] = pack_11_10_11(t[3], t[4], t[5]);
      packed[4 * k + 3] = pack_unorm(t[6], 8) << 24 | pack_unorm(t[7], 8) << 16 |
                          pack_unorm(t[8], 8) << 8 |
                          pack_unorm(sigmoid(double(g.raw_opacity[i])), 8);
      // f_rest order: all coefficients of R, then of G, then of B.
      for (std::size_t ch = 0; ch < 3; ++ch)
        for (std::size_t m = 1; m < K; ++m)
          sh[k * rest + ch * (K - 1) + (m - 1)] = quantize_sh(g.sh[(i * K + m) * 3 + ch]);
    }
  }
  write_atomically(path, [&](std::ofstream& out) {
    out << "ply\nformat binary_little_endian 1.0\ncomment Generated by splat\nelement chunk "
        << chunks << "\n";
    for (const char* p : kChunkProps) out << "property float " << p << "\n";
    out << "element vertex " << n << "\n";
    for (const char* p : kVertexProps) out << "property uint " << p << "\n";
    if (rest) {
      out << "element sh " << n << "\n";
      for (std::size_t k = 0; k < rest; ++k) out << "property uchar f_rest_" << k << "\n";
    }
    out << "end_header\n";
    out.write(reinterpret_cast<const char*>(chunk_data.data()),
              std::streamsize(chunk_data.size() * 4));
    out.write(reinterpret_cast<const char*>(packed.data()), std::streamsize(packed.size() * 4));
    out.write(reinterpret_cast<const char*>(sh.data()), std::streamsize(sh.size()));
  });
}

Gaussians read_compressed_ply(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  const PlyHeader h = parse_ply_header(path, in);
  if (h.ascii) throw input_error(path, "format", "a compressed .ply is binary_little_endian");
  const PlyElement* chunk = h.find("chunk");
  const PlyElement* vertex = h.find("vertex");
  const PlyElement* shel = h.find("sh");
  // The body is read as the elements' fixed-size rows in this order.
  std::string names;
  for (const PlyElement& e : h.elements) {
    names += (names.empty() ? "" : ", ") + e.name;
    if (e.has_list)
      throw input_error(path, "element " + e.name,
                        "list properties are not part of a compressed .ply");
  }
  if (names != "chunk, vertex" && names != "chunk, vertex, sh")
    throw input_error(path, "elements",
                      "expected chunk, vertex and optionally sh, in that order; found " + names);
  // No element can have more rows than the whole file holds: then no product or sum of counts
  // below can wrap past 2^64 into a size that looks right.
  const std::uint64_t file_size = std::filesystem::file_size(path);
  for (const PlyElement& e : h.elements)
    if (e.row_bytes != 0 && e.count > file_size / e.row_bytes)
      throw input_error(path, "element " + e.name,
                        "count " + std::to_string(e.count) + " of " + std::to_string(e.row_bytes) +
                            "-byte rows is more than the whole file (" + std::to_string(file_size) +
                            " bytes) holds");
  const std::size_t n = vertex->count;
  if (chunk->count != (n + kCompressedChunk - 1) / kCompressedChunk)
    throw input_error(path, "element chunk",
                      std::to_string(chunk->count) + " chunks for " + std::to_string(n) +
                          " splats (expected one per 256)");
  const bool has_colors = chunk->props.size() != kGeometryChunkProps;
  if (chunk->props.size() != kGeometryChunkProps && chunk->props.size() != std::size(kChunkProps))
    throw input_error(path, "element chunk",
                      std::to_string(chunk->props.size()) + " properties, expected 12 or 18");
  std::vector<const PlyProperty*> cp, vp, sp;
  for (std::size_t k = 0; k < (has_colors ? std::size(kChunkProps) : kGeometryChunkProps); ++k)
    cp.push_back(&require(path, *chunk, kChunkProps[k], ScalarType::kFloat32, "float"));
  for (const char* name : kVertexProps)
    vp.push_back(&require(path, *vertex, name, ScalarType::kUint32, "uint"));
  int degree = 0;
  if (shel) {
    if (shel->count != n)
      throw input_error(path, "element sh",
                        std::to_string(shel->count) + " rows for " + std::to_string(n) + " splats");
    for (int d = 1; d <= 3; ++d)
      if (shel->props.size() == std::size_t(3 * (sh_coeffs(d) - 1))) degree = d;
    if (!degree)
      throw input_error(path, "element sh",
                        std::to_string(shel->props.size()) + " properties, expected 9, 24 or 45");
    for (std::size_t k = 0; k < shel->props.size(); ++k)
      sp.push_back(
          &require(path, *shel, "f_rest_" + std::to_string(k), ScalarType::kUint8, "uchar"));
  }
  // The body: each element's rows one after another; the size is checked before anything is read.
  const std::size_t body =
      chunk->count * chunk->row_bytes + n * vertex->row_bytes + (shel ? n * shel->row_bytes : 0);
  if (file_size - h.body_start < body)
    throw input_error(path, "body",
                      "truncated: the header's counts need " + std::to_string(body) +
                          " bytes after the header, the file has " +
                          std::to_string(file_size - h.body_start));
  std::vector<char> bytes(body);
  if (!in.read(bytes.data(), std::streamsize(body))) throw input_error(path, "body", "read error");
  const std::size_t vertex_start = chunk->count * chunk->row_bytes,
                    sh_start = vertex_start + n * vertex->row_bytes;

  Gaussians g;
  g.sh_degree = degree;
  g.resize(n);
  const std::size_t K = std::size_t(g.K());
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t crow = (i / kCompressedChunk) * chunk->row_bytes,
                      vrow = vertex_start + i * vertex->row_bytes;
    std::array<double, 18> b{};
    for (std::size_t k = 0; k < cp.size(); ++k) b[k] = field<float>(bytes, crow, *cp[k]);
    const auto lerp = [&](int lo, double t) { return b[lo] * (1 - t) + b[lo + 3] * t; };
    const auto p = unpack_11_10_11(field<std::uint32_t>(bytes, vrow, *vp[0]));
    const auto q = unpack_rotation(field<std::uint32_t>(bytes, vrow, *vp[1]));
    const auto s = unpack_11_10_11(field<std::uint32_t>(bytes, vrow, *vp[2]));
    const std::uint32_t color = field<std::uint32_t>(bytes, vrow, *vp[3]);
    for (int j = 0; j < 3; ++j) {
      g.means[3 * i + j] = finite_or_throw(path, i, "position", lerp(j, p[j]));
      g.log_scales[3 * i + j] = finite_or_throw(path, i, "scale", lerp(6 + j, s[j]));
      const double t = unpack_unorm(color >> (24 - 8 * j), 8);
      g.sh[i * K * 3 + j] =
          finite_or_throw(path, i, "color", ((has_colors ? lerp(12 + j, t) : t) - 0.5) / kShC0);
    }
    g.raw_opacity[i] = logit_of_byte(double(color & 0xff));
    for (int j = 0; j < 4; ++j) g.quats[4 * i + j] = float(q[j]);
    for (std::size_t ch = 0; ch < 3; ++ch)
      for (std::size_t m = 1; m < K; ++m)
        g.sh[(i * K + m) * 3 + ch] = float(unquantize_sh(field<std::uint8_t>(
            bytes, sh_start + i * shel->row_bytes, *sp[ch * (K - 1) + (m - 1)])));
  }
  return g;
}

}  // namespace splat
