// The TOML config reader and its validation.
#include "core/error.h"
#include "fuzz_util.h"
#include "train/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    splat::Config cfg;
    splat::apply_config_text(cfg, std::string_view(reinterpret_cast<const char*>(data), size),
                             "fuzz.toml");
    cfg.validate();
  } catch (const splat::Error&) {
  }
  return 0;
}
