#pragma once
// NumPy's .npy format, version 1.0 (numpy.lib.format): a magic string, a header that is a Python
// dict literal (dtype, order, shape) padded with spaces to a multiple of 64 bytes and ended by a
// newline, then the array's bytes in C order. Little-endian float32 and uint8 arrays.
#include <cstdint>
#include <string>
#include <vector>

namespace splat {

// Writes [shape...] elements of data to path (whole or not at all).
void write_npy(const std::string& path,
               const std::vector<std::uint8_t>& data,
               const std::vector<std::size_t>& shape);
void write_npy(const std::string& path,
               const std::vector<float>& data,
               const std::vector<std::size_t>& shape);

// The header's bytes (magic to newline) for a dtype descr ("|u1", "<f4") and shape.
std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape);

}  // namespace splat
