// Damaged images, images that do not fit their camera, lenses and settings that would shrink the
// images to slivers, and inputs that load but are likely mistakes (a photograph as a mask,
// data.alpha_mask on opaque images, a point cloud at one spot): each is an error naming the file
// and the field, or a warning naming the file.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <fstream>

#include "bad_input_util.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "jpeg_encode.h"
#include "test_util.h"
#include "train/config.h"
#include "train/init.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using nlohmann::json;
using test::expect_error;

void write_bytes(const fs::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// The offset of the first marker `code` (0xc0: SOF0, 0xda: SOS) of a JPEG.
std::size_t jpeg_marker(const Bytes& b, std::uint8_t code) {
  for (std::size_t i = 2; i + 1 < b.size(); ++i)
    if (b[i] == 0xff && b[i + 1] == code) return i;
  ADD_FAILURE() << "no marker " << int(code);
  return 0;
}

void put_be16(Bytes& b, std::size_t at, unsigned v) {
  b[at] = std::uint8_t(v >> 8), b[at + 1] = std::uint8_t(v);
}

// A JPEG whose frame header (SOF0: length, precision, height, width) says width x height.
Bytes jpeg_claiming(int width, int height) {
  Bytes b = test::photo_jpeg(96, 64);
  const std::size_t sof = jpeg_marker(b, 0xc0);
  put_be16(b, sof + 5, unsigned(height));
  put_be16(b, sof + 7, unsigned(width));
  return b;
}

fs::path written(const std::string& name, const Bytes& bytes) {
  const fs::path p = test::temp_dir("bad_image_data_" + name) / (name + ".jpg");
  write_bytes(p, bytes);
  return p;
}

std::string decode_error(const std::string& name, const Bytes& bytes) {
  const fs::path p = written(name, bytes);
  return test::error_of([&] { read_image(p.string()); });
}

TEST(BadInputImageData, TheUndamagedJpegDecodes) {
  const Image img = read_image(written("undamaged", test::photo_jpeg(96, 64)).string());
  EXPECT_EQ(img.width, 96);
  EXPECT_EQ(img.height, 64);
}

// A disk block of zeros in the scan data: libjpeg's Huffman decoding resynchronizes and says
// nothing, and every DC term after it is off.
TEST(BadInputImageData, ZeroedJpegScanDataIsAnError) {
  Bytes b = test::photo_jpeg(96, 64);
  const std::size_t scan = jpeg_marker(b, 0xda) + 14;  // the SOS segment of 3 components
  const std::size_t mid = scan + (b.size() - scan) / 2;
  std::fill(b.begin() + std::ptrdiff_t(mid), b.begin() + std::ptrdiff_t(mid + 64), 0);
  const std::string msg = decode_error("zeroed", b);
  expect_error(msg, {"zeroed.jpg", "JPEG", "damaged", "64 zero bytes"});
}

TEST(BadInputImageData, JpegHeaderClaimingMoreRowsIsAnError) {
  expect_error(decode_error("taller", jpeg_claiming(96, 640)), {"taller.jpg", "JPEG", "libjpeg"});
}

TEST(BadInputImageData, JpegHeaderClaimingFewerRowsIsAnError) {
  expect_error(decode_error("shorter", jpeg_claiming(96, 32)),
               {"shorter.jpg", "JPEG", "libjpeg", "extraneous bytes"});
}

// IHDR says 24 of the 48 rows, with its CRC recomputed: libpng warned "Too much image data" and
// returned the top half.
TEST(BadInputImageData, PngHeaderClaimingFewerRowsIsAnError) {
  const fs::path p = test::temp_dir("bad_image_data_png") / "short.png";
  test::write_rgb_png(p, 64, 48);
  Bytes b = test::file_bytes(p);
  put_be16(b, 16 + 6, 24);  // IHDR data (width, height) starts at byte 16
  const std::uint32_t crc = std::uint32_t(crc32(0, b.data() + 12, 17));  // type + data
  for (int k = 0; k < 4; ++k) b[29 + std::size_t(k)] = std::uint8_t(crc >> (24 - 8 * k));
  write_bytes(p, b);
  expect_error(test::error_of([&] { read_image(p.string()); }),
               {"short.png", "PNG", "Too much image data"});
}

// ---- images and their cameras ------------------------------------------------------------------

// transforms.json's w x h is 16x12; a 1000x658 photo among 1080x1920 frames trained with the
// capture's intrinsics scaled by two different factors.
TEST(BadInputImageSize, ImageOfAnotherAspectThanItsCameraIsAnError) {
  const fs::path dir = test::temp_dir("bad_image_size_aspect");
  test::write_transforms_scene(dir);
  test::write_rgb_png(dir / "images/f1.png", 12, 16);
  expect_error(test::error_of([&] { load_transforms(dir.string(), {}); }),
               {"transforms.json", "frames[1]", "f1.png", "12x16", "16x12"});
}

// A downscaled copy of the same aspect (nerfstudio's images_2/) keeps loading, its intrinsics
// scaled to it, odd sizes rounded either way included.
TEST(BadInputImageSize, DownscaledCopiesOfTheSameAspectLoad) {
  for (const auto& [w, h] : {std::pair{8, 6}, std::pair{5, 4}, std::pair{6, 4}}) {
    const fs::path dir = test::temp_dir("bad_image_size_downscaled");
    test::write_transforms_scene(dir);
    for (int i = 0; i < 4; ++i)
      test::write_rgb_png(dir / ("images/f" + std::to_string(i) + ".png"), w, h);
    const Dataset d = load_transforms(dir.string(), {});
    EXPECT_EQ(d.train[0].camera.width, w);
    EXPECT_DOUBLE_EQ(d.train[0].camera.fx, 20.0 * w / 16);
  }
}

// ---- lenses ---------------------------------------------------------------------------------

ColmapModel opencv_model(double cx, double k1, double k2) {
  ColmapModel m = test::small_colmap_model();
  m.cameras[0].model_id = 4;  // OPENCV: fx fy cx cy k1 k2 p1 p2
  m.cameras[0].params = {20, 20, cx, 6, k1, k2, 0, 0};
  return m;
}

std::string colmap_error(const std::string& name, const ColmapModel& m) {
  const fs::path dir = test::temp_dir("bad_lens_" + name);
  test::write_colmap_scene(dir, m, test::ColmapForm::Text);
  return test::error_of([&] { load_colmap(dir.string(), {}); });
}

// k1 = k2 = 1e6 cropped the 16x12 images to 1x2 pixels and trained on them.
TEST(BadInputLens, CropToASliverNamesTheCameraAndTheTerms) {
  expect_error(colmap_error("huge_k", opencv_model(8, 1e6, 1e6)),
               {"cameras.txt", "camera 1", "k1 = 1e+06", "k2 = 1e+06", "less than half"});
  expect_error(colmap_error("k1_1000", opencv_model(8, 1000, 0)),
               {"cameras.txt", "camera 1", "k1 = 1000", "less than half"});
}

TEST(BadInputLens, CropToASliverInTransformsNamesTheFrame) {
  const fs::path dir = test::temp_dir("bad_lens_transforms");
  test::write_transforms_scene(dir, [](json& j) {
    j["camera_model"] = "OPENCV";
    j["k1"] = 1000;
  });
  expect_error(test::error_of([&] { load_transforms(dir.string(), {}); }),
               {"transforms.json", "frames[", "k1 = 1000", "less than half"});
}

// A principal point outside the image was reported as distortion terms that fold the image.
TEST(BadInputLens, PrincipalPointOutsideTheImageIsNamed) {
  expect_error(colmap_error("cx_outside", opencv_model(-10, 0.01, 0)),
               {"cameras.txt", "camera 1", "principal point cx = -10", "outside the 16x12 image"});
}

// A real wide-angle lens keeps most of its picture.
TEST(BadInputLens, StrongBarrelDistortionStillLoads) {
  const fs::path dir = test::temp_dir("bad_lens_barrel");
  ColmapModel m = opencv_model(8, -0.25, 0.05);
  m.cameras[0].params[0] = m.cameras[0].params[1] = 8;  // about 90 degrees across
  test::write_colmap_scene(dir, m, test::ColmapForm::Text);
  const Dataset d = load_colmap(dir.string(), {});
  EXPECT_GE(d.train[0].camera.width, 8);
}

// ---- settings that shrink the images ---------------------------------------------------------

TEST(BadInputImageSettings, MaxImageSizeOrWidthBelow32IsAnError) {
  for (const int n : {1, 3, 31}) {
    Config cfg;
    cfg.data.max_image_size = n;
    expect_error(test::error_of([&] { cfg.validate(); }),
                 {"data.max_image_size = " + std::to_string(n), "a long side", "at least 32"});
    cfg = Config{};
    cfg.data.max_image_width = n;
    expect_error(test::error_of([&] { cfg.validate(); }),
                 {"data.max_image_width = " + std::to_string(n), "a width", "at least 32"});
  }
  Config cfg;
  for (const int n : {0, 32, 1600}) {
    cfg.data.max_image_size = cfg.data.max_image_width = n;
    EXPECT_NO_THROW(cfg.validate()) << n;
  }
}

// ---- likely mistakes: warnings -----------------------------------------------------------------

std::string stderr_of(const std::function<void()>& f) {
  ::testing::internal::CaptureStderr();
  f();
  return ::testing::internal::GetCapturedStderr();
}

// Every frame gets masks/fI.png, written by `write_mask`.
fs::path masked_transforms_scene(const std::string& name,
                                 const std::function<void(const fs::path&)>& write_mask) {
  const fs::path dir = test::temp_dir(name);
  test::write_transforms_scene(dir, [](json& j) {
    for (std::size_t i = 0; i < j["frames"].size(); ++i)
      j["frames"][i]["mask_path"] = "masks/f" + std::to_string(i) + ".png";
  });
  for (int i = 0; i < 4; ++i) write_mask(dir / ("masks/f" + std::to_string(i) + ".png"));
  return dir;
}

TEST(BadInputMask, PhotographAsAMaskIsNamedInAWarning) {
  const fs::path dir = masked_transforms_scene(
      "bad_mask_photo", [](const fs::path& p) { test::write_rgb_png(p, 16, 12); });
  const std::string err = stderr_of([&] { load_transforms(dir.string(), {}); });
  expect_error(err, {"warning: ", "masks/f", "100% of its pixels",
                     "a photograph rather than a mask", "3 more"});
}

TEST(BadInputMask, BinaryMaskWithSoftEdgesGivesNoWarning) {
  const fs::path dir = masked_transforms_scene("bad_mask_binary", [](const fs::path& p) {
    Image m(16, 12, 3);
    for (int y = 0; y < 12; ++y)
      for (int x = 0; x < 16; ++x)
        for (int c = 0; c < 3; ++c) m.at(x, y, c) = x < 7 ? 0.0f : x == 7 ? 0.5f : 1.0f;
    fs::create_directories(p.parent_path());
    write_png(p.string(), m);
  });
  EXPECT_EQ(stderr_of([&] { load_transforms(dir.string(), {}); }), "");
}

TEST(BadInputMask, AlphaMaskOnOpaqueImagesIsNamedInAWarning) {
  const fs::path dir = test::temp_dir("bad_mask_alpha");
  test::write_transforms_scene(dir);
  LoadOptions opts;
  opts.alpha_mask = true;
  const std::string err = stderr_of([&] { load_transforms(dir.string(), opts); });
  expect_error(err, {"warning: ", "data.alpha_mask", "4 of 4 images", "images/f"});
}

// One point, or copies of one, used to start every splat at that spot at a scale of 1e-7.
TEST(BadInputPoints, PointsAtOneSpotWarnAndStartRandom) {
  for (const std::size_t n : {std::size_t(1), std::size_t(5)}) {
    ColmapModel m = test::small_colmap_model();
    m.points.resize(n);
    for (ColmapPoint& p : m.points) p.xyz = {0.5, 0.5, 0.5};
    const fs::path dir = test::temp_dir("bad_points_one_spot");
    test::write_colmap_scene(dir, m, test::ColmapForm::Text);
    const Dataset data = load_colmap(dir.string(), {});
    ModelConfig cfg;
    cfg.init_points = 200;
    Gaussians g;
    const std::string err = stderr_of([&] { g = initialize_model(cfg, data, 1); });
    expect_error(err, {"warning: ", "points3D.txt", "at one spot", "200 random splats"});
    ASSERT_EQ(g.size(), 200u);
    const SceneBounds b = scene_bounds(data);
    double spread = 0;
    for (std::size_t i = 0; i < g.size(); ++i)
      spread = std::max(spread, std::abs(double(g.means[i * 3]) - b.center[0]));
    EXPECT_GT(spread, 0.1 * b.half_size);
    for (const float s : g.log_scales) EXPECT_GT(s, std::log(1e-4f));
  }
}

}  // namespace
}  // namespace splat
