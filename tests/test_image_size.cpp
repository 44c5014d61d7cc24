// data.max_image_size: the area filter (io/image_io.h resize_area), the loaded size and the
// intrinsics that follow it, on a COLMAP scene.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "app/common.h"
#include "core/image.h"
#include "engine/target.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "io/loader_util.h"
#include "test_util.h"
#include "train/config.h"
#include "train/load.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

TEST(ImageSize, AreaFilterAveragesWhatEachPixelCovers) {
  Image img(3, 1, 3);
  for (int x = 0; x < 3; ++x)
    for (int c = 0; c < 3; ++c) img.at(x, 0, c) = float(x);  // 0 1 2
  const Image out = resize_area(img, 2, 1);                  // each output covers 1.5 inputs
  EXPECT_FLOAT_EQ(out.at(0, 0, 0), (0.0f + 0.5f * 1.0f) / 1.5f);
  EXPECT_FLOAT_EQ(out.at(1, 0, 1), (0.5f * 1.0f + 2.0f) / 1.5f);
  // An integer factor is the box filter of downscale().
  Image big(8, 6, 4);
  for (std::size_t i = 0; i < big.data.size(); ++i) big.data[i] = float(i % 13) / 13.0f;
  const Image a = resize_area(big, 4, 3), b = downscale(big, 2);
  for (std::size_t i = 0; i < a.data.size(); ++i) EXPECT_NEAR(a.data[i], b.data[i], 1e-6f) << i;
  // The mean is kept.
  const Image c = resize_area(big, 5, 4);
  double sum_in = 0, sum_out = 0;
  for (float v : big.data) sum_in += v;
  for (float v : c.data) sum_out += v;
  EXPECT_NEAR(sum_out / double(c.data.size()), sum_in / double(big.data.size()), 1e-6);
  EXPECT_THROW(resize_area(big, 9, 6), Error);
}

TEST(ImageSize, LoadedSizeKeepsTheAspectAndIsOffByDefault) {
  LoadOptions opts;
  EXPECT_EQ(loaded_size(1920, 1080, opts), (std::array<int, 2>{1920, 1080}));
  opts.max_image_size = 1600;
  EXPECT_EQ(loaded_size(1920, 1080, opts), (std::array<int, 2>{1600, 900}));
  EXPECT_EQ(loaded_size(1080, 1920, opts), (std::array<int, 2>{900, 1600}));
  EXPECT_EQ(loaded_size(1600, 1000, opts), (std::array<int, 2>{1600, 1000}));
  opts.downscale = 2;  // first the integer factor, then the limit
  EXPECT_EQ(loaded_size(4000, 3000, opts), (std::array<int, 2>{1600, 1200}));
  EXPECT_EQ(loaded_size(3000, 2000, opts), (std::array<int, 2>{1500, 1000}));
}

// 3DGS's rule for large photos ("rescaling to 1.6K"): the width alone decides, so a portrait
// phone photo keeps a long side above 1600.
TEST(ImageSize, TheWidthLimitShrinksWideImagesOnly) {
  LoadOptions opts;
  opts.max_image_width = 1600;
  EXPECT_EQ(loaded_size(4032, 3024, opts), (std::array<int, 2>{1600, 1200}));
  EXPECT_EQ(loaded_size(3024, 4032, opts), (std::array<int, 2>{1600, 2133}));
  EXPECT_EQ(loaded_size(1080, 1920, opts), (std::array<int, 2>{1080, 1920}));
  EXPECT_EQ(loaded_size(1600, 1000, opts), (std::array<int, 2>{1600, 1000}));
  // With both limits the tighter one decides.
  opts.max_image_size = 1000;
  EXPECT_EQ(loaded_size(4000, 3000, opts), (std::array<int, 2>{1000, 750}));
  EXPECT_EQ(loaded_size(2000, 500, opts), (std::array<int, 2>{1000, 250}));
  opts.max_image_size = 3000;
  EXPECT_EQ(loaded_size(4000, 1000, opts), (std::array<int, 2>{1600, 400}));
}

void write_text(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// A COLMAP scene of three w x h images, dark on the left half, bright on the right.
fs::path colmap_scene(const std::string& name, int w, int h) {
  const fs::path dir = test::temp_dir(name);
  std::string ims;
  for (int k = 0; k < 3; ++k) {
    const std::string n = "a" + std::to_string(k) + ".png";
    Image img(w, h, 3);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c) img.at(x, y, c) = x < w / 2 ? 0.2f : 0.8f;
    fs::create_directories(dir / "images");
    write_png((dir / "images" / n).string(), img);
    ims += std::to_string(k + 1) + " 1 0 0 0 0 0 " + std::to_string(k + 3) + " 1 " + n + "\n\n";
  }
  write_text(dir / "sparse/0/cameras.txt",
             "1 PINHOLE " + std::to_string(w) + " " + std::to_string(h) + " 50 52 " +
                 std::to_string(w / 2) + " " + std::to_string(h / 2) + "\n");
  write_text(dir / "sparse/0/images.txt", ims);
  write_text(dir / "sparse/0/points3D.txt", "");
  return dir;
}

TEST(ImageSize, ColmapImagesAndIntrinsicsShrinkTogether) {
  const fs::path dir = colmap_scene("image_size_colmap", 40, 30);
  LoadOptions opts;
  opts.max_image_size = 16;
  const Dataset d = load_colmap(dir.string(), opts);
  const View& v = d.train[0];
  EXPECT_EQ(v.image.width, 16);
  EXPECT_EQ(v.image.height, 12);
  EXPECT_EQ(v.camera.width, 16);
  EXPECT_EQ(v.camera.height, 12);
  EXPECT_DOUBLE_EQ(v.camera.fx, 50.0 * 16 / 40);
  EXPECT_DOUBLE_EQ(v.camera.fy, 52.0 * 12 / 30);
  EXPECT_DOUBLE_EQ(v.camera.cx, 8.0);
  EXPECT_DOUBLE_EQ(v.camera.cy, 6.0);
  const Image t = target_image(v.image);
  EXPECT_NEAR(t.at(0, 0, 0), 0.2f, 0.5f / 255);
  EXPECT_NEAR(t.at(15, 11, 2), 0.8f, 0.5f / 255);
  EXPECT_NEAR(t.at(7, 5, 0), 0.2f, 0.5f / 255);  // covers x in [17.5, 20): left side only
  EXPECT_NEAR(t.at(8, 5, 0), 0.8f, 0.5f / 255);
}

// The config's default is 3DGS's rule; 0 keeps the full width.
TEST(ImageSize, TrainingShrinksImagesWiderThan1600ByDefault) {
  const fs::path dir = colmap_scene("image_size_default", 1700, 20);
  Config cfg;
  EXPECT_EQ(cfg.data.max_image_width, 1600);
  const Dataset shrunk = load_dataset(dir.string(), cfg);
  EXPECT_EQ(shrunk.train[0].camera.width, 1600);
  EXPECT_EQ(shrunk.train[0].camera.height, 19);  // 20 * 1600 / 1700 = 18.8
  EXPECT_EQ(shrunk.train[0].image.width, 1600);
  cfg.data.max_image_width = 0;
  const Dataset full = load_dataset(dir.string(), cfg);
  EXPECT_EQ(full.train[0].camera.width, 1700);
  EXPECT_EQ(full.train[0].image.height, 20);
}

// A checkpoint's config from before data.max_image_width resumes at the size it trained at; one
// that names the key keeps its value.
TEST(ImageSize, ACheckpointFromBeforeTheWidthLimitKeepsItsFullSize) {
  Config old_run;
  std::string toml = old_run.to_toml();
  const std::size_t line = toml.find("max_image_width");
  ASSERT_NE(line, std::string::npos);
  toml.erase(line, toml.find('\n', line) + 1 - line);
  EXPECT_EQ(app::resolve_config(app::ConfigArgs{}, toml, "old.ckpt").data.max_image_width, 0);
  old_run.data.max_image_width = 1200;
  EXPECT_EQ(
      app::resolve_config(app::ConfigArgs{}, old_run.to_toml(), "new.ckpt").data.max_image_width,
      1200);
  EXPECT_EQ(app::resolve_config(app::ConfigArgs{}, "", "").data.max_image_width, 1600);
}

}  // namespace
}  // namespace splat
