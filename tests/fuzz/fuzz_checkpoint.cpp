// The checkpoint reader.
#include "core/error.h"
#include "fuzz_util.h"
#include "io/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = splat::fuzz::work_dir() / "run.ckpt";
  splat::fuzz::write_file(path, data, size);
  try {
    splat::read_checkpoint(path.string());
  } catch (const splat::Error&) {
  }
  return 0;
}
