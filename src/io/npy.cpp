#include "io/npy.h"

#include <bit>

#include "core/error.h"
#include "io/file_util.h"

namespace splat {

static_assert(std::endian::native == std::endian::little, "the .npy files say little-endian");

std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape) {
  std::string dims;
  for (const std::size_t d : shape) dims += std::to_string(d) + ", ";
  // Python's tuple repr: (3,) for one dimension, (2, 3) for two.
  if (!shape.empty()) dims.resize(dims.size() - (shape.size() == 1 ? 1 : 2));
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // magic (6) + version (2) + length (2) + dict + padding + '\n' is a multiple of 64.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  const std::size_t len = dict.size();
  return std::string("\x93NUMPY\x01\x00", 8) + char(len & 0xff) + char(len >> 8) + dict;
}

namespace {

template <class T>
void write_array(const std::string& path,
                 const std::vector<T>& data,
                 const std::vector<std::size_t>& shape,
                 const std::string& descr) {
  std::size_t count = 1;
  for (const std::size_t d : shape) count *= d;
  if (count != data.size())
    throw Error("write_npy: " + path + ": " + std::to_string(data.size()) +
                " elements for a shape of " + std::to_string(count));
  write_atomically(path, [&](std::ofstream& f) {
    f << npy_header(descr, shape);
    f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(T)));
  });
}

}  // namespace

void write_npy(const std::string& path,
               const std::vector<std::uint8_t>& data,
               const std::vector<std::size_t>& shape) {
  write_array(path, data, shape, "|u1");
}

void write_npy(const std::string& path,
               const std::vector<float>& data,
               const std::vector<std::size_t>& shape) {
  write_array(path, data, shape, "<f4");
}

}  // namespace splat
