// The checkpoint reader. Each input is read as it is, and once more with its last four bytes
// replaced by the CRC32C of the others: an input damaged at random fails the checksum, and the
// second read takes the paths of a file whose checksum holds (what a writer with a bug, or a
// crafted file, gives the parser).
#include <cstring>
#include <vector>

#include "core/crc32c.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "io/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = splat::fuzz::work_dir() / "run.ckpt";
  std::vector<std::uint8_t> bytes(data, data + size);
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      if (size < 4) break;
      const std::uint32_t crc = splat::crc32c(0, bytes.data(), size - 4);
      std::memcpy(bytes.data() + size - 4, &crc, sizeof crc);
    }
    splat::fuzz::write_file(path, bytes.data(), bytes.size());
    try {
      splat::read_checkpoint(path.string());
    } catch (const splat::Error&) {
    }
  }
  return 0;
}
