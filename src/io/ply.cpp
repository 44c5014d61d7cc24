#include "io/ply.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/file_util.h"
#include "io/ply_header.h"
#include "io/read_file.h"

namespace splat {
namespace {

static_assert(std::endian::native == std::endian::little,
              "binary PLY bodies are copied byte for byte, so the host must be little-endian");

// The 3DGS PLY names f_rest for degrees 0..3 only (0, 9, 24 or 45 properties).
constexpr int kMaxShDegree = 3;

// Where one PLY property lives in the model: (g.*field)[i * stride + offset]. field is null for
// the normals, which 3DGS writes as zeros and never reads back.
struct Slot {
  std::string name;
  std::vector<float> Gaussians::*field;
  std::size_t stride;
  std::size_t offset;
};

// The standard vertex layout in file order (as the INRIA code writes it). The writer emits it and
// the reader looks up the same names, so the two cannot disagree.
std::vector<Slot> standard_layout(int K) {
  const std::size_t sh_stride = std::size_t(K) * 3;
  std::vector<Slot> s;
  for (std::size_t j = 0; j < 3; ++j)
    s.push_back({std::string(1, "xyz"[j]), &Gaussians::means, 3, j});
  for (const char* n : {"nx", "ny", "nz"}) s.push_back({n, nullptr, 0, 0});
  for (std::size_t c = 0; c < 3; ++c)
    s.push_back({"f_dc_" + std::to_string(c), &Gaussians::sh, sh_stride, c});
  // Channel-major: all higher-order coefficients of R, then of G, then of B.
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t k = 1; k < std::size_t(K); ++k)
      s.push_back({"f_rest_" + std::to_string(c * (K - 1) + (k - 1)), &Gaussians::sh, sh_stride,
                   k * 3 + c});
  s.push_back({"opacity", &Gaussians::raw_opacity, 1, 0});
  for (std::size_t j = 0; j < 3; ++j)
    s.push_back({"scale_" + std::to_string(j), &Gaussians::log_scales, 3, j});
  for (std::size_t j = 0; j < 4; ++j)
    s.push_back({"rot_" + std::to_string(j), &Gaussians::quats, 4, j});
  return s;
}

// Where a vertex is, for messages: its index, and its line in an ascii file (0 in binary).
struct VertexAt {
  std::size_t index;
  std::size_t line = 0;
};

std::string label(VertexAt v) {
  std::string s = "vertex " + std::to_string(v.index);
  if (v.line) s += " (line " + std::to_string(v.line) + ")";
  return s;
}

// The one place a value crosses the file boundary: NaN, inf and values beyond float range are
// rejected with the vertex and property named.
float checked_value(const std::string& path, VertexAt at, const std::string& prop, double v) {
  const float f = static_cast<float>(v);
  if (std::isfinite(f)) return f;
  const std::string what = std::isnan(v)   ? "NaN"
                           : std::isinf(v) ? (v > 0 ? "+inf" : "-inf")
                                           : "out of float range";
  throw input_error(path, label(at) + ", property " + prop, what);
}

// Shapes must match before any indexing; a mismatch here is a caller bug, caught at the boundary.
void check_writable(const std::string& path, const Gaussians& g) {
  if (g.sh_degree < 0 || g.sh_degree > kMaxShDegree)
    throw input_error(path, "sh_degree",
                      std::to_string(g.sh_degree) + " cannot be stored in a 3DGS PLY (0..3)");
  const auto widths = g.widths();
  std::size_t i = 0;
  g.for_each_group([&](const char* name, const std::vector<float>& v) {
    if (v.size() != g.size() * widths[i++])
      throw input_error(path, name,
                        std::to_string(v.size()) + " floats for " + std::to_string(g.size()) +
                            " Gaussians of SH degree " + std::to_string(g.sh_degree));
  });
}

// ---- reading -------------------------------------------------------------------------------

// One model slot bound to the file column that feeds it.
struct Binding {
  const Slot* slot;
  const PlyProperty* prop;
};

// The vertex element, which 3DGS files have first: elements before it would have to be skipped
// byte for byte, and no 3DGS tool writes them.
const PlyElement& vertex_element(const std::string& path, const PlyHeader& h) {
  if (h.elements.empty())
    throw input_error(path, "element vertex", "the header declares no vertex element");
  const PlyElement& v = h.elements.front();
  if (v.name != "vertex")
    throw input_error(path, "element " + v.name,
                      "elements before 'element vertex' are not supported");
  if (v.has_list)
    throw input_error(path, "element vertex",
                      "list properties in element vertex are not supported");
  return v;
}

int degree_from_header(const std::string& path, const PlyElement& h) {
  std::size_t n_rest = 0;
  for (const auto& p : h.props) n_rest += p.name.starts_with("f_rest_");
  for (int d = 0; d <= kMaxShDegree; ++d)
    if (n_rest == std::size_t(3 * (sh_coeffs(d) - 1))) return d;
  throw input_error(
      path, "f_rest",
      std::to_string(n_rest) + " f_rest_* properties; expected 0, 9, 24 or 45 (SH degree 0..3)");
}

std::vector<Binding> bind(const std::string& path,
                          const PlyElement& h,
                          const std::vector<Slot>& layout) {
  std::vector<Binding> out;
  for (const auto& s : layout) {
    if (!s.field) continue;
    const PlyProperty* found = h.find(s.name);
    if (!found) throw input_error(path, "property " + s.name, "missing from the vertex element");
    out.push_back({&s, found});
  }
  return out;
}

// Stores vertex i; value(prop) yields the file's value for one property of this vertex.
template <class Value>
void store_vertex(const std::string& path,
                  VertexAt at,
                  const std::vector<Binding>& bindings,
                  Value&& value,
                  Gaussians& g) {
  for (const auto& b : bindings) {
    const Slot& s = *b.slot;
    (g.*s.field)[at.index * s.stride + s.offset] = checked_value(path, at, s.name, value(*b.prop));
  }
}

std::string truncated(std::size_t expected, std::size_t read) {
  return "truncated body: expected " + std::to_string(expected) + " vertices, read " +
         std::to_string(read);
}

void read_binary_body(const std::string& path,
                      std::istream& in,
                      std::size_t file_size,
                      const PlyHeader& header,
                      const std::vector<Binding>& bindings,
                      Gaussians& g) {
  const PlyElement& h = header.elements.front();
  const std::size_t available = (file_size - header.body_start) / h.row_bytes;
  if (available < h.count) throw input_error(path, "element vertex", truncated(h.count, available));
  // Chunks keep memory flat however large the file is.
  constexpr std::size_t kChunkRows = 4096;
  std::vector<char> chunk(kChunkRows * h.row_bytes);
  for (std::size_t first = 0; first < h.count; first += kChunkRows) {
    const std::size_t rows = std::min(kChunkRows, h.count - first);
    if (!in.read(chunk.data(), static_cast<std::streamsize>(rows * h.row_bytes)))
      throw input_error(path, "element vertex", "read error");
    for (std::size_t r = 0; r < rows; ++r) {
      const char* row = chunk.data() + r * h.row_bytes;
      store_vertex(
          path, VertexAt{first + r}, bindings,
          [&](const PlyProperty& p) { return load_scalar(row + p.offset, p.type); }, g);
    }
  }
}

void read_ascii_body(const std::string& path,
                     std::istream& in,
                     const PlyHeader& header,
                     const std::vector<Binding>& bindings,
                     Gaussians& g) {
  const PlyElement& h = header.elements.front();
  std::size_t line_no = header.body_line - 1;
  std::size_t i = 0;
  std::string line;
  while (i < h.count && next_ply_line(in, &line)) {
    ++line_no;
    const VertexAt at{i, line_no};
    if (line.size() > kMaxPlyLine) throw input_error(path, label(at), "line too long");
    const auto tok = split_ws(line);
    if (tok.empty()) continue;
    if (i >= g.size()) break;  // cannot happen (see read_ply); keeps the store in bounds
    if (tok.size() != h.props.size())
      throw input_error(path, label(at),
                        "expected " + std::to_string(h.props.size()) + " values, found " +
                            std::to_string(tok.size()));
    store_vertex(
        path, at, bindings,
        [&](const PlyProperty& p) {
          std::string_view t = tok[p.index];
          if (t.starts_with('+')) t.remove_prefix(1);  // from_chars rejects a plus sign
          double v = 0;
          const auto [end, ec] = std::from_chars(t.begin(), t.end(), v);
          if (ec != std::errc() || end != t.end())
            throw input_error(path, label(at) + ", property " + p.name,
                              "'" + std::string(tok[p.index]) + "' is not a number");
          return v;
        },
        g);
    ++i;
  }
  if (i < h.count) throw input_error(path, "element vertex", truncated(h.count, i));
}

}  // namespace

void write_ply(const std::string& path, const Gaussians& g, const std::string& comment) {
  check_writable(path, g);
  if (comment.find_first_of("\r\n") != std::string::npos)
    throw input_error(path, "comment", "must be one line");
  const std::vector<Slot> layout = standard_layout(g.K());
  write_atomically(path, [&](std::ofstream& out) {
    out << "ply\nformat binary_little_endian 1.0\n";
    if (!comment.empty()) out << "comment " << comment << "\n";
    out << "element vertex " << g.size() << "\n";
    for (const auto& s : layout) out << "property float " << s.name << "\n";
    out << "end_header\n";
    std::vector<float> row(layout.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      for (std::size_t j = 0; j < layout.size(); ++j) {
        const Slot& s = layout[j];
        row[j] = s.field ? checked_value(path, VertexAt{i}, s.name,
                                         (g.*s.field)[i * s.stride + s.offset])
                         : 0.0f;
      }
      out.write(reinterpret_cast<const char*>(row.data()),
                static_cast<std::streamsize>(row.size() * sizeof(float)));
    }
  });
}

std::vector<std::string> read_ply_comments(const std::string& path) {
  require_regular_file(path, "PLY model");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  return parse_ply_header(path, in).comments;
}

Gaussians read_ply(const std::string& path) {
  require_regular_file(path, "PLY model");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  std::error_code ec;
  const std::size_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw input_error(path, "file", "cannot stat: " + ec.message());
  const PlyHeader h = parse_ply_header(path, in);
  const PlyElement& vertex = vertex_element(path, h);
  Gaussians g;
  g.sh_degree = degree_from_header(path, vertex);
  const std::vector<Slot> layout = standard_layout(g.K());
  const std::vector<Binding> bindings = bind(path, vertex, layout);
  // Allocate no more vertices than the body can hold, so a corrupt count cannot exhaust memory:
  // a binary row is row_bytes long, an ascii row at least one character and a separator per value.
  const std::size_t min_row = h.ascii ? 2 * vertex.props.size() - 1 : vertex.row_bytes;
  g.resize(std::min(vertex.count, (file_size - h.body_start) / std::max<std::size_t>(min_row, 1)));
  if (h.ascii)
    read_ascii_body(path, in, h, bindings, g);
  else
    read_binary_body(path, in, file_size, h, bindings, g);
  return g;
}

}  // namespace splat
