#pragma once
// Base64 (RFC 4648, standard alphabet, '=' padding): binary made safe for data: URIs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace splat {

std::string base64_encode(const std::uint8_t* data, std::size_t size);
inline std::string base64_encode(const std::vector<std::uint8_t>& bytes) {
  return base64_encode(bytes.data(), bytes.size());
}

}  // namespace splat
