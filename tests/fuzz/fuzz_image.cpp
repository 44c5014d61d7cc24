// The image decoders (PNG, JPEG, WebP, chosen by content).
#include "core/error.h"
#include "fuzz_util.h"
#include "io/image_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = splat::fuzz::work_dir() / "image";
  splat::fuzz::write_file(path, data, size);
  try {
    splat::read_image(path.string());
  } catch (const splat::Error&) {
  }
  return 0;
}
