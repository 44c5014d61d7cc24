// The training report page: its encoders, its pictures and plots, and the page as a whole
// (self-contained, escaped, well-formed, and complete with missing data).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/base64.h"
#include "core/error.h"
#include "io/image_io.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

// ---- base64 -------------------------------------------------------------------------------------

TEST(Base64, Rfc4648Vectors) {
  const std::pair<std::string, std::string> cases[] = {{"", ""},
                                                       {"f", "Zg=="},
                                                       {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},
                                                       {"foob", "Zm9vYg=="},
                                                       {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(base64_encode(reinterpret_cast<const std::uint8_t*>(in.data()), in.size()), out)
        << in;
  }
}

TEST(Base64, AllByteValuesUseTheStandardAlphabet) {
  std::vector<std::uint8_t> bytes = {0xfb, 0xff, 0xbf, 0x00, 0x10, 0x83};
  EXPECT_EQ(base64_encode(bytes), "+/+/ABCD");
}

// ---- PNG encoding -------------------------------------------------------------------------------

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// PNG bytes through the file reader.
Image decode(const std::vector<std::uint8_t>& png, const std::string& name) {
  const fs::path p = test::temp_dir(name) / "x.png";
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
  return read_image(p.string());
}

// A smooth RGB picture; `shift` moves its colours, so two shifts differ everywhere a bit.
Image picture(int w, int h, float shift = 0) {
  Image img(w, h, 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      img.at(x, y, 0) = std::clamp(float(x) / w + shift, 0.0f, 1.0f);
      img.at(x, y, 1) = float(y) / h;
      img.at(x, y, 2) = 0.5f;
    }
  }
  return img;
}

TEST(EncodePng, RoundTripsThroughTheReader) {
  std::mt19937 rng(7);
  for (const int c : {1, 3, 4}) {
    Image img(11, 5, c);
    for (float& v : img.data) v = float(rng() % 256) / 255.0f;
    const Image back = decode(encode_png(img), "encode_png");
    ASSERT_EQ(back.width, 11);
    ASSERT_EQ(back.height, 5);
    ASSERT_EQ(back.channels, c == 1 ? 3 : c);  // the reader gives gray as RGB
    for (int y = 0; y < 5; ++y) {
      for (int x = 0; x < 11; ++x) {
        for (int k = 0; k < back.channels; ++k) {
          ASSERT_EQ(back.at(x, y, k), img.at(x, y, c == 1 ? 0 : k)) << c << " " << x << "," << y;
        }
      }
    }
  }
}

TEST(EncodePng, IsWhatWritePngWrites) {
  const Image img = picture(17, 9);
  const fs::path p = test::temp_dir("encode_png_same") / "x.png";
  write_png(p.string(), img);
  const std::string file = read_text(p);
  const std::vector<std::uint8_t> png = encode_png(img);
  EXPECT_EQ(file, std::string(png.begin(), png.end()));
}

TEST(EncodePng, RejectsMalformedImages) {
  test::expect_contains(test::error_of([] { encode_png(Image(2, 2, 2)); }), {"2 channels"});
  Image bad(2, 2, 3);
  bad.data.pop_back();
  test::expect_contains(test::error_of([&] { encode_png(bad); }), {"inconsistent image 2x2x3"});
}

TEST(EncodePng, IndexedRoundTripsThroughTheReader) {
  const std::vector<std::array<float, 3>> palette = {{0, 0, 0}, {1, 0.5f, 0}, {0.2f, 0.4f, 1}};
  const std::vector<std::uint8_t> index = {0, 1, 2, 2, 1, 0};
  const std::vector<std::uint8_t> png = encode_png_indexed(index, 3, 2, palette);
  ASSERT_GT(png.size(), 26u);
  EXPECT_EQ(png[25], 3);  // IHDR colour type 3: indexed colour
  const Image back = decode(png, "encode_png_indexed");
  ASSERT_EQ(back.channels, 3);
  for (std::size_t i = 0; i < index.size(); ++i) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(back.data[3 * i + c], std::round(palette[index[i]][c] * 255) / 255.0f) << i;
    }
  }
}

TEST(EncodePng, IndexedRejectsBadIndicesAndPalettes) {
  const std::vector<std::array<float, 3>> two = {{0, 0, 0}, {1, 1, 1}};
  test::expect_contains(test::error_of([&] {
                          encode_png_indexed({0, 1, 2, 1}, 2, 2, two);
                        }),
                        {"index 2 is beyond the palette of 2"});
  test::expect_contains(test::error_of([&] {
                          encode_png_indexed({0, 1, 1}, 2, 2, two);
                        }),
                        {"3 indices for a 2x2 image"});
  test::expect_contains(test::error_of([] { encode_png_indexed({0}, 1, 1, {}); }),
                        {"a palette of 0 colours"});
}

}  // namespace
}  // namespace splat
