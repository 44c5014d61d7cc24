#pragma once
// The PLY header: elements in file order with their typed properties, as the 3DGS .ply reader
// and the PlayCanvas compressed .ply reader both need it.
#include <cstddef>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace splat {

enum class ScalarType { kInt8, kUint8, kInt16, kUint16, kInt32, kUint32, kFloat32, kFloat64 };

// The value at p (little-endian) of type t, as a double.
double load_scalar(const char* p, ScalarType t);

struct PlyProperty {
  std::string name;
  ScalarType type;
  std::size_t index;   // column in an ascii row
  std::size_t offset;  // byte offset in a binary row
};

struct PlyElement {
  std::string name;
  std::size_t count = 0;
  std::vector<PlyProperty> props;
  std::size_t row_bytes = 0;  // binary record size (meaningless with has_list)
  bool has_list = false;      // list properties make the records variable-sized

  const PlyProperty* find(std::string_view prop) const;
};

struct PlyHeader {
  bool ascii = false;
  std::vector<PlyElement> elements;   // in file order
  std::size_t body_start = 0;         // byte offset of the first record
  std::size_t body_line = 0;          // 1-based line number of the first record (ascii)
  std::vector<std::string> comments;  // the text after "comment ", in file order

  const PlyElement* find(std::string_view element) const;
};

// Parses the header of `in` (positioned at its start), leaving it at the first body byte.
// Malformed headers are errors naming `path` and the line or field.
PlyHeader parse_ply_header(const std::string& path, std::istream& in);

// Reads one line without its "\n" or "\r\n"; false at the end of the file. A line longer than
// kMaxPlyLine comes back cut at kMaxPlyLine + 1 characters for the caller to reject.
inline constexpr std::size_t kMaxPlyLine = 1 << 16;
bool next_ply_line(std::istream& in, std::string* line);

// Whitespace-separated tokens of one line.
std::vector<std::string_view> split_ws(std::string_view s);

}  // namespace splat
