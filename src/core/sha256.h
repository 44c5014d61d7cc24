#pragma once
// SHA-256 (FIPS 180-4), for provenance: the digest of a binary or a config in a benchmark report.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace splat {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  std::array<std::uint8_t, 32> finish();  // once; the object is spent afterwards

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;  // bytes
};

// Lower-case hex digest of `data`.
std::string sha256_hex(std::string_view data);
// Lower-case hex digest of a file's bytes; throws splat::Error naming the file if it cannot be
// read.
std::string sha256_file(const std::string& path);

}  // namespace splat
