#include "io/ply_header.h"

#include <charconv>
#include <cstdint>
#include <cstring>

#include "core/error.h"

namespace splat {
namespace {

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

}  // namespace

double load_scalar(const char* p, ScalarType t) {
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

const PlyProperty* PlyElement::find(std::string_view prop) const {
  for (const auto& p : props)
    if (p.name == prop) return &p;
  return nullptr;
}

const PlyElement* PlyHeader::find(std::string_view element) const {
  for (const auto& e : elements)
    if (e.name == element) return &e;
  return nullptr;
}

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

bool next_ply_line(std::istream& in, std::string* line) {
  line->clear();
  std::streambuf* buf = in.rdbuf();
  int c = buf->sbumpc();
  if (c == std::char_traits<char>::eof()) return false;
  for (; c != std::char_traits<char>::eof() && c != '\n'; c = buf->sbumpc()) {
    line->push_back(static_cast<char>(c));
    if (line->size() > kMaxPlyLine) return true;
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

PlyHeader parse_ply_header(const std::string& path, std::istream& in) {
  std::size_t line_no = 1;
  std::string line;
  if (!next_ply_line(in, &line) || line != "ply")
    throw input_error(path, "header", "not a PLY file (the first line is not 'ply')");
  PlyHeader h;
  bool have_format = false;
  while (next_ply_line(in, &line)) {
    ++line_no;
    const std::string where = "header line " + std::to_string(line_no);
    if (line.size() > kMaxPlyLine) throw input_error(path, where, "line too long");
    const auto tok = split_ws(line);
    if (!tok.empty() && tok[0] == "comment")
      h.comments.push_back(line.size() > 8 ? line.substr(8) : std::string());
    if (tok.empty() || tok[0] == "comment" || tok[0] == "obj_info") continue;
    if (tok[0] == "end_header") {
      if (!have_format) throw input_error(path, "format", "the header has no format line");
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
      if (h.find(tok[1]))
        throw input_error(path, where, "a second 'element " + std::string(tok[1]) + "'");
      PlyElement e;
      e.name = tok[1];
      const auto [p, ec] = std::from_chars(tok[2].begin(), tok[2].end(), e.count);
      if (ec != std::errc() || p != tok[2].end())
        throw input_error(path, "element " + e.name, "bad count '" + std::string(tok[2]) + "'");
      h.elements.push_back(std::move(e));
      continue;
    }
    if (tok[0] == "property") {
      if (h.elements.empty()) throw input_error(path, where, "property before any element");
      PlyElement& e = h.elements.back();
      if (tok.size() >= 2 && tok[1] == "list") {
        e.has_list = true;
        continue;
      }
      if (tok.size() != 3) throw input_error(path, where, "expected 'property TYPE NAME'");
      const TypeName* type = nullptr;
      for (const auto& t : kTypeNames)
        if (t.name == tok[1]) type = &t;
      if (!type)
        throw input_error(path, "property " + std::string(tok[2]),
                          "unknown type '" + std::string(tok[1]) + "'");
      if (e.find(tok[2]))
        throw input_error(path, "property " + std::string(tok[2]), "declared twice");
      e.props.push_back({std::string(tok[2]), type->type, e.props.size(), e.row_bytes});
      e.row_bytes += type->bytes;
      continue;
    }
    throw input_error(path, where, "unknown header keyword '" + std::string(tok[0]) + "'");
  }
  throw input_error(path, "header", "no 'end_header' line");
}

}  // namespace splat
