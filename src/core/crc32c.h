#pragma once
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of iSCSI, ext4 and
// RFC 3720: checkpoints carry it to tell a damaged file from a good one.
#include <cstddef>
#include <cstdint>

namespace splat {

// The CRC32C of `size` bytes continuing from `crc`, the CRC32C of the bytes before them (0 for
// none): crc32c(crc32c(0, a, n), b, m) is the CRC32C of a followed by b.
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t size);

}  // namespace splat
