// The 3DGS .ply reader (ascii and binary).
#include "core/error.h"
#include "fuzz_util.h"
#include "io/ply.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = splat::fuzz::work_dir() / "model.ply";
  splat::fuzz::write_file(path, data, size);
  try {
    splat::read_ply(path.string());
  } catch (const splat::Error&) {
  }
  return 0;
}
