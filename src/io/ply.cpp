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

enum class ScalarType { kInt8, kUint8, kInt16, kUint16, kInt32, kUint32, kFloat32, kFloat64 };

struct TypeName {
  std::string_view name;
  ScalarType type;
  std::size_t bytes;
};

// Both the classic and the sized spellings of the PLY scalar types.
constexpr TypeName kTypeNames[] = {
    {"char", ScalarType::kInt8, 1},      {"int8", ScalarType::kInt8, 1},
    {"uchar", ScalarType::kUint8, 1},    {"uint8", ScalarType::kUint8, 1},
    {"short", ScalarType::kInt16, 2},    {"int16", ScalarType::kInt16, 2},
    {"ushort", ScalarType::kUint16, 2},  {"uint16", ScalarType::kUint16, 2},
    {"int", ScalarType::kInt32, 4},      {"int32", ScalarType::kInt32, 4},
    {"uint", ScalarType::kUint32, 4},    {"uint32", ScalarType::kUint32, 4},
    {"float", ScalarType::kFloat32, 4},  {"float32", ScalarType::kFloat32, 4},
    {"double", ScalarType::kFloat64, 8}, {"float64", ScalarType::kFloat64, 8},
};

template <class T>
double load_as(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

double load(const char* p, ScalarType t) {
  switch (t) {
    case ScalarType::kInt8:
      return load_as<std::int8_t>(p);
    case ScalarType::kUint8:
      return load_as<std::uint8_t>(p);
    case ScalarType::kInt16:
      return load_as<std::int16_t>(p);
    case ScalarType::kUint16:
      return load_as<std::uint16_t>(p);
    case ScalarType::kInt32:
      return load_as<std::int32_t>(p);
    case ScalarType::kUint32:
      return load_as<std::uint32_t>(p);
    case ScalarType::kFloat32:
      return load_as<float>(p);
    case ScalarType::kFloat64:
      return load_as<double>(p);
  }
  return 0.0;
}

struct PlyProperty {
  std::string name;
  ScalarType type;
  std::size_t index;   // column in an ascii row
  std::size_t offset;  // byte offset in a binary row
};

struct PlyHeader {
  bool ascii = false;
  std::size_t vertex_count = 0;
  std::vector<PlyProperty> props;
  std::size_t row_bytes = 0;          // binary vertex record size
  std::size_t body_start = 0;         // byte offset of the first vertex
  std::size_t body_line = 0;          // 1-based line number of the first vertex (ascii)
  std::vector<std::string> comments;  // the text after "comment "
};

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\r') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Longer lines mean the file is not the text we expect (say, binary data with no newline), so
// reading stops there instead of buffering it all.
constexpr std::size_t kMaxLine = 1 << 16;

// Reads one line without its "\n" or "\r\n"; false at the end of the file. A line longer than
// kMaxLine comes back cut at kMaxLine + 1 characters for the caller to reject.
bool next_line(std::istream& in, std::string* line) {
  line->clear();
  std::streambuf* buf = in.rdbuf();
  int c = buf->sbumpc();
  if (c == std::char_traits<char>::eof()) return false;
  for (; c != std::char_traits<char>::eof() && c != '\n'; c = buf->sbumpc()) {
    line->push_back(static_cast<char>(c));
    if (line->size() > kMaxLine) return true;
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

PlyHeader parse_header(const std::string& path, std::istream& in) {
  std::size_t line_no = 1;
  std::string line;
  if (!next_line(in, &line) || line != "ply")
    throw input_error(path, "header", "not a PLY file (the first line is not 'ply')");
  PlyHeader h;
  bool have_format = false;
  std::string element;  // the element the following properties belong to
  while (next_line(in, &line)) {
    ++line_no;
    const std::string where = "header line " + std::to_string(line_no);
    if (line.size() > kMaxLine) throw input_error(path, where, "line too long");
    const auto tok = split_ws(line);
    if (!tok.empty() && tok[0] == "comment")
      h.comments.push_back(line.size() > 8 ? line.substr(8) : std::string());
    if (tok.empty() || tok[0] == "comment" || tok[0] == "obj_info") continue;
    if (tok[0] == "end_header") {
      if (!have_format) throw input_error(path, "format", "the header has no format line");
      if (element.empty())
        throw input_error(path, "element vertex", "the header declares no vertex element");
      h.body_start = static_cast<std::size_t>(in.tellg());
      h.body_line = line_no + 1;
      return h;
    }
    if (tok[0] == "format") {
      if (tok.size() < 2) throw input_error(path, where, "format line without a format");
      if (tok[1] == "ascii" || tok[1] == "binary_little_endian") {
        h.ascii = tok[1] == "ascii";
        have_format = true;
        continue;
      }
      throw input_error(path, "format",
                        "unsupported format '" + std::string(tok[1]) +
                            "' (ascii and binary_little_endian are read)");
    }
    if (tok[0] == "element") {
      if (tok.size() != 3) throw input_error(path, where, "expected 'element NAME COUNT'");
      // Elements after the vertices (faces, ...) are not needed. Ones before would have to be
      // skipped byte for byte, and no 3DGS tool writes them.
      if (element.empty() && tok[1] != "vertex")
        throw input_error(path, "element " + std::string(tok[1]),
                          "elements before 'element vertex' are not supported");
      if (!element.empty() && tok[1] == "vertex")
        throw input_error(path, where, "a second 'element vertex'");
      element = tok[1];
      if (element != "vertex") continue;
      const auto [p, ec] = std::from_chars(tok[2].begin(), tok[2].end(), h.vertex_count);
      if (ec != std::errc() || p != tok[2].end())
        throw input_error(path, "element vertex", "bad count '" + std::string(tok[2]) + "'");
      continue;
    }
    if (tok[0] == "property") {
      if (element.empty()) throw input_error(path, where, "property before any element");
      if (element != "vertex") continue;
      if (tok.size() >= 2 && tok[1] == "list")
        throw input_error(path, where, "list properties in element vertex are not supported");
      if (tok.size() != 3) throw input_error(path, where, "expected 'property TYPE NAME'");
      const TypeName* type = nullptr;
      for (const auto& t : kTypeNames)
        if (t.name == tok[1]) type = &t;
      if (!type)
        throw input_error(path, "property " + std::string(tok[2]),
                          "unknown type '" + std::string(tok[1]) + "'");
      for (const auto& p : h.props)
        if (p.name == tok[2]) throw input_error(path, "property " + p.name, "declared twice");
      h.props.push_back({std::string(tok[2]), type->type, h.props.size(), h.row_bytes});
      h.row_bytes += type->bytes;
      continue;
    }
    throw input_error(path, where, "unknown header keyword '" + std::string(tok[0]) + "'");
  }
  throw input_error(path, "header", "no 'end_header' line");
}

// One model slot bound to the file column that feeds it.
struct Binding {
  const Slot* slot;
  const PlyProperty* prop;
};

int degree_from_header(const std::string& path, const PlyHeader& h) {
  std::size_t n_rest = 0;
  for (const auto& p : h.props) n_rest += p.name.starts_with("f_rest_");
  for (int d = 0; d <= kMaxShDegree; ++d)
    if (n_rest == std::size_t(3 * (sh_coeffs(d) - 1))) return d;
  throw input_error(
      path, "f_rest",
      std::to_string(n_rest) + " f_rest_* properties; expected 0, 9, 24 or 45 (SH degree 0..3)");
}

std::vector<Binding> bind(const std::string& path,
                          const PlyHeader& h,
                          const std::vector<Slot>& layout) {
  std::vector<Binding> out;
  for (const auto& s : layout) {
    if (!s.field) continue;
    const PlyProperty* found = nullptr;
    for (const auto& p : h.props)
      if (p.name == s.name) found = &p;
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
                      const PlyHeader& h,
                      const std::vector<Binding>& bindings,
                      Gaussians& g) {
  const std::size_t available = (file_size - h.body_start) / h.row_bytes;
  if (available < h.vertex_count)
    throw input_error(path, "element vertex", truncated(h.vertex_count, available));
  // Chunks keep memory flat however large the file is.
  constexpr std::size_t kChunkRows = 4096;
  std::vector<char> chunk(kChunkRows * h.row_bytes);
  for (std::size_t first = 0; first < h.vertex_count; first += kChunkRows) {
    const std::size_t rows = std::min(kChunkRows, h.vertex_count - first);
    if (!in.read(chunk.data(), static_cast<std::streamsize>(rows * h.row_bytes)))
      throw input_error(path, "element vertex", "read error");
    for (std::size_t r = 0; r < rows; ++r) {
      const char* row = chunk.data() + r * h.row_bytes;
      store_vertex(
          path, VertexAt{first + r}, bindings,
          [&](const PlyProperty& p) { return load(row + p.offset, p.type); }, g);
    }
  }
}

void read_ascii_body(const std::string& path,
                     std::istream& in,
                     const PlyHeader& h,
                     const std::vector<Binding>& bindings,
                     Gaussians& g) {
  std::size_t line_no = h.body_line - 1;
  std::size_t i = 0;
  std::string line;
  while (i < h.vertex_count && next_line(in, &line)) {
    ++line_no;
    const VertexAt at{i, line_no};
    if (line.size() > kMaxLine) throw input_error(path, label(at), "line too long");
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
  if (i < h.vertex_count) throw input_error(path, "element vertex", truncated(h.vertex_count, i));
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
  return parse_header(path, in).comments;
}

Gaussians read_ply(const std::string& path) {
  require_regular_file(path, "PLY model");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  std::error_code ec;
  const std::size_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw input_error(path, "file", "cannot stat: " + ec.message());
  const PlyHeader h = parse_header(path, in);
  Gaussians g;
  g.sh_degree = degree_from_header(path, h);
  const std::vector<Slot> layout = standard_layout(g.K());
  const std::vector<Binding> bindings = bind(path, h, layout);
  // Allocate no more vertices than the body can hold, so a corrupt count cannot exhaust memory:
  // a binary row is row_bytes long, an ascii row at least one character and a separator per value.
  const std::size_t min_row = h.ascii ? 2 * h.props.size() - 1 : h.row_bytes;
  g.resize(std::min(h.vertex_count, (file_size - h.body_start) / min_row));
  if (h.ascii)
    read_ascii_body(path, in, h, bindings, g);
  else
    read_binary_body(path, in, file_size, h, bindings, g);
  return g;
}

}  // namespace splat
