#include "core/crc32c.h"

#include <array>

namespace splat {

namespace {

// table[k][b]: the CRC register after byte b followed by k zero bytes, so that eight bytes are
// folded with eight lookups ("slicing by 8", Kounavis and Berry 2005) instead of one at a time.
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t r = b;
    for (int bit = 0; bit < 8; ++bit) r = (r >> 1) ^ (0x82F63B78u & (0u - (r & 1u)));
    t[0][b] = r;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  return t;
}

constexpr Tables kTables = make_tables();

}  // namespace

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const auto& t = kTables;
  std::uint32_t r = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    const std::uint32_t lo = r ^ (std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 |
                                  std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24);
    r = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; size > 0; --size, ++p) r = (r >> 8) ^ t[0][(r ^ *p) & 0xff];
  return ~r;
}

}  // namespace splat
