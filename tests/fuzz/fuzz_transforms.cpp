// transforms.json (instant-ngp / nerfstudio) and transforms_train.json (NeRF-synthetic): the
// input is the JSON; one 2x2 image, images/a.png, is there for frames that name it.
#include "core/error.h"
#include "core/image.h"
#include "fuzz_util.h"
#include "io/dataset.h"
#include "io/image_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& dir = splat::fuzz::work_dir();
  static const bool image = [&] {
    std::filesystem::create_directories(dir / "images");
    splat::write_png((dir / "images" / "a.png").string(), splat::Image(2, 2, 3, 0.5f));
    return true;
  }();
  (void)image;
  splat::fuzz::write_file(dir / "transforms.json", data, size);
  splat::fuzz::write_file(dir / "transforms_train.json", data, size);
  for (const auto load : {&splat::load_transforms, &splat::load_blender}) {
    try {
      load(dir.string(), splat::LoadOptions{});
    } catch (const splat::Error&) {
    }
  }
  return 0;
}
