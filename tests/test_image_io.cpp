// Image codecs: exact round trips, real files from ../shared, and errors that name the file.
#include <gtest/gtest.h>
#include <png.h>
#include <webp/encode.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <vector>

#include "core/error.h"
#include "io/image_io.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// Random 8-bit samples; alpha (when present) never 0 so lossy-under-transparency encoders
// cannot alter RGB.
std::vector<std::uint8_t> random_samples(int w, int h, int c, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> s(std::size_t(w) * h * c);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool alpha = c == 4 && i % 4 == 3;
    s[i] = std::uint8_t(alpha ? 1 + rng() % 255 : rng() % 256);
  }
  return s;
}

Image to_image(int w, int h, int c, const std::vector<std::uint8_t>& s) {
  Image img(w, h, c);
  for (std::size_t i = 0; i < s.size(); ++i) img.data[i] = float(s[i]) / 255.0f;
  return img;
}

void expect_exact_u8(const Image& img, const std::vector<std::uint8_t>& s) {
  ASSERT_EQ(img.data.size(), s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    ASSERT_EQ(img.data[i], float(s[i]) / 255.0f) << "sample " << i;
  }
}

// Encodes with libpng's simplified API: lets the test produce 16-bit and palette files.
void write_png_raw(const fs::path& p,
                   png_uint_32 format,
                   int w,
                   int h,
                   const void* pixels,
                   const void* colormap = nullptr,
                   int colormap_entries = 0) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(w);
  image.height = png_uint_32(h);
  image.format = format;
  image.colormap_entries = png_uint_32(colormap_entries);
  ASSERT_TRUE(png_image_write_to_file(&image, p.c_str(), 0, pixels, 0, colormap)) << image.message;
}

TEST(ImageIo, PngRoundTripRgbExact) {
  const auto dir = test::temp_dir("png_rgb");
  const auto s = random_samples(13, 7, 3, 1);
  const std::string path = (dir / "rgb.png").string();
  write_png(path, to_image(13, 7, 3, s));
  const Image img = read_image(path);
  EXPECT_EQ(img.width, 13);
  EXPECT_EQ(img.height, 7);
  EXPECT_EQ(img.channels, 3);
  expect_exact_u8(img, s);
}

TEST(ImageIo, PngRoundTripRgbaExact) {
  const auto dir = test::temp_dir("png_rgba");
  auto s = random_samples(9, 11, 4, 2);
  s[3] = 0;  // PNG keeps RGB under zero alpha, so this must survive too
  const std::string path = (dir / "rgba.png").string();
  write_png(path, to_image(9, 11, 4, s));
  const Image img = read_image(path);
  EXPECT_EQ(img.channels, 4);
  expect_exact_u8(img, s);
}

TEST(ImageIo, PngWriteClampsAndRounds) {
  const auto dir = test::temp_dir("png_clamp");
  Image img(4, 1, 1);
  img.data = {-0.5f, 2.0f, 0.5f, std::nanf("")};
  const std::string path = (dir / "g.png").string();
  write_png(path, img);
  const Image back = read_image(path);  // gray comes back as RGB
  ASSERT_EQ(back.channels, 3);
  const float expected[] = {0.0f, 1.0f, 128.0f / 255.0f, 0.0f};
  for (int x = 0; x < 4; ++x) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(back.at(x, 0, c), expected[x]) << x;
  }
  EXPECT_EQ(fs::directory_iterator(dir)->path().filename(), "g.png");  // no temp file left
}

TEST(ImageIo, WritePngToMissingDirectoryThrowsNamingPath) {
  const std::string path = (test::temp_dir("png_nodir") / "no" / "such" / "x.png").string();
  try {
    write_png(path, Image(2, 2, 3));
    FAIL() << "expected splat::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(ImageIo, Png16BitGrayDecodesFullPrecision) {
  const auto dir = test::temp_dir("png16");
  const std::vector<std::uint16_t> v = {0, 1, 257, 12345, 40000, 65535};
  const auto p = dir / "g16.png";
  // Linear 16-bit gray without alpha is written as-is by the simplified API.
  write_png_raw(p, PNG_FORMAT_LINEAR_Y, 6, 1, v.data());
  const Image img = read_image(p.string());
  ASSERT_EQ(img.channels, 3);
  for (int x = 0; x < 6; ++x) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(img.at(x, 0, c), float(v[x]) / 65535.0f) << x;
  }
}

TEST(ImageIo, PngPaletteWithTransparencyBecomesRgba) {
  const auto dir = test::temp_dir("png_palette");
  const std::uint8_t colormap[] = {255, 0, 0, 255, 0, 255, 0, 128, 0, 0, 255, 0};
  const std::uint8_t index[] = {0, 1, 2, 1};
  const auto p = dir / "pal.png";
  write_png_raw(p, PNG_FORMAT_RGBA_COLORMAP, 2, 2, index, colormap, 3);
  const Image img = read_image(p.string());
  ASSERT_EQ(img.channels, 4);
  for (int i = 0; i < 4; ++i) {
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(img.data[4 * i + c], colormap[4 * index[i] + c] / 255.0f) << i << "," << c;
    }
  }
}

TEST(ImageIo, LosslessWebpIsPixelExact) {
  const auto dir = test::temp_dir("webp_lossless");
  const auto s = random_samples(17, 5, 4, 3);
  std::uint8_t* out = nullptr;
  const std::size_t n = WebPEncodeLosslessRGBA(s.data(), 17, 5, 17 * 4, &out);
  ASSERT_GT(n, 0u);
  write_bytes(dir / "x.webp", Bytes(out, out + n));
  WebPFree(out);
  const Image img = read_image((dir / "x.webp").string());
  EXPECT_EQ(img.width, 17);
  EXPECT_EQ(img.channels, 4);
  expect_exact_u8(img, s);
}

TEST(ImageIo, DecodesByContentNotExtension) {
  const auto dir = test::temp_dir("png_misnamed");
  const auto s = random_samples(3, 3, 3, 4);
  write_png((dir / "really_png.jpg").string(), to_image(3, 3, 3, s));
  expect_exact_u8(read_image((dir / "really_png.jpg").string()), s);
}

TEST(ImageIo, RealLegoLosslessWebp) {
  SPLAT_REQUIRE_SHARED("data/lego/train/r_0.webp");
  const Image img = read_image((test::shared_dir() / "data/lego/train/r_0.webp").string());
  EXPECT_EQ(img.width, 800);
  EXPECT_EQ(img.height, 800);
  ASSERT_EQ(img.channels, 4);
  bool has_transparent = false, has_opaque = false;
  for (std::size_t i = 0; i < img.pixels(); ++i) {
    has_transparent |= img.data[4 * i + 3] == 0.0f;
    has_opaque |= img.data[4 * i + 3] == 1.0f;
  }
  EXPECT_TRUE(has_transparent);
  EXPECT_TRUE(has_opaque);
}

TEST(ImageIo, RealFoxJpeg) {
  SPLAT_REQUIRE_SHARED("data/fox/images/0001.jpg");
  const Image img = read_image((test::shared_dir() / "data/fox/images/0001.jpg").string());
  EXPECT_EQ(img.width, 1080);
  EXPECT_EQ(img.height, 1920);
  ASSERT_EQ(img.channels, 3);
  const auto [lo, hi] = std::minmax_element(img.data.begin(), img.data.end());
  EXPECT_GE(*lo, 0.0f);
  EXPECT_LE(*hi, 1.0f);
  EXPECT_GT(*hi - *lo, 0.5f);  // a real photo, not a flat fill
}

TEST(ImageIo, GarbageBytesNameTheFile) {
  const auto p = test::temp_dir("garbage") / "noise.png";
  write_bytes(p, Bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '!'});
  const std::string msg = test::error_of([&] { read_image(p.string()); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a PNG, JPEG or WebP file"), std::string::npos) << msg;
}

TEST(ImageIo, EmptyFileNamesTheFile) {
  const auto p = test::temp_dir("empty") / "empty.png";
  write_bytes(p, {});
  const std::string msg = test::error_of([&] { read_image(p.string()); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
}

TEST(ImageIo, MissingFileNamesTheFile) {
  const auto p = test::temp_dir("missing") / "nope.png";
  const std::string msg = test::error_of([&] { read_image(p.string()); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
}

TEST(ImageIo, TruncatedPngIsAnError) {
  const auto dir = test::temp_dir("trunc_png");
  const auto p = dir / "t.png";
  write_png(p.string(), to_image(64, 64, 3, random_samples(64, 64, 3, 5)));
  Bytes b = read_bytes(p);
  b.resize(b.size() / 2);
  write_bytes(p, b);
  const std::string msg = test::error_of([&] { read_image(p.string()); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(ImageIo, TruncatedJpegIsAnError) {
  SPLAT_REQUIRE_SHARED("data/fox/images/0001.jpg");
  Bytes b = read_bytes(test::shared_dir() / "data/fox/images/0001.jpg");
  b.resize(b.size() / 2);
  const auto p = test::temp_dir("trunc_jpg") / "t.jpg";
  write_bytes(p, b);
  const std::string msg = test::error_of([&] { read_image(p.string()); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(ImageIo, TruncatedWebpIsAnError) {
  SPLAT_REQUIRE_SHARED("data/lego/train/r_0.webp");
  Bytes b = read_bytes(test::shared_dir() / "data/lego/train/r_0.webp");
  b.resize(b.size() / 2);
  const auto p = test::temp_dir("trunc_webp") / "t.webp";
  write_bytes(p, b);
  const std::string msg = test::error_of([&] { read_image(p.string()); });
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(ImageIo, CompositeOnBackground) {
  Image rgba(2, 1, 4);
  rgba.data = {0.2f, 0.4f, 0.6f, 0.25f, 0.9f, 0.8f, 0.7f, 0.0f};
  const Image out = composite_on(rgba, {1.0f, 0.5f, 0.0f});
  ASSERT_EQ(out.channels, 3);
  ASSERT_EQ(out.width, 2);
  EXPECT_FLOAT_EQ(out.at(0, 0, 0), 0.2f * 0.25f + 1.0f * 0.75f);
  EXPECT_FLOAT_EQ(out.at(0, 0, 1), 0.4f * 0.25f + 0.5f * 0.75f);
  EXPECT_FLOAT_EQ(out.at(0, 0, 2), 0.6f * 0.25f);
  EXPECT_FLOAT_EQ(out.at(1, 0, 0), 1.0f);  // alpha 0: background only
  EXPECT_FLOAT_EQ(out.at(1, 0, 1), 0.5f);
  EXPECT_FLOAT_EQ(out.at(1, 0, 2), 0.0f);

  Image rgb(1, 1, 3);
  rgb.data = {0.1f, 0.2f, 0.3f};
  EXPECT_EQ(composite_on(rgb, {1.0f, 1.0f, 1.0f}).data, rgb.data);
}

TEST(ImageIo, DownscaleBoxFilter) {
  // 5x3, factor 2 -> 2x1: the last column and row are dropped.
  Image img(5, 3, 2);
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 5; ++x) {
      img.at(x, y, 0) = float(10 * y + x);
      img.at(x, y, 1) = 1.0f;
    }
  }
  const Image out = downscale(img, 2);
  ASSERT_EQ(out.width, 2);
  ASSERT_EQ(out.height, 1);
  ASSERT_EQ(out.channels, 2);
  EXPECT_FLOAT_EQ(out.at(0, 0, 0), (0 + 1 + 10 + 11) / 4.0f);
  EXPECT_FLOAT_EQ(out.at(1, 0, 0), (2 + 3 + 12 + 13) / 4.0f);
  EXPECT_FLOAT_EQ(out.at(1, 0, 1), 1.0f);
  EXPECT_EQ(downscale(img, 1).data, img.data);
  EXPECT_THROW(downscale(img, 4), Error);
}

}  // namespace
}  // namespace splat
