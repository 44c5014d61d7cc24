// The training report page: its encoders, its pictures and plots, and the page as a whole
// (self-contained, escaped, well-formed, and complete with missing data).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/base64.h"
#include "core/error.h"
#include "io/image_io.h"
#include "test_util.h"
#include "train/report_images.h"
#include "train/svg_plot.h"

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

// ---- pictures -----------------------------------------------------------------------------------

TEST(ReportImages, InfernoEndsAndMiddle) {
  auto u8 = [](float v) { return int(std::lround(v * 255)); };
  const auto lo = inferno(0), mid = inferno(0.5f), hi = inferno(1), over = inferno(7);
  EXPECT_EQ(u8(lo[0]), 0x00);
  EXPECT_EQ(u8(lo[2]), 0x04);
  EXPECT_EQ(u8(mid[0]), 0xbc);  // matplotlib's inferno(0.5) is #bc3754
  EXPECT_EQ(u8(mid[1]), 0x37);
  EXPECT_EQ(u8(mid[2]), 0x54);
  EXPECT_EQ(u8(hi[0]), 0xfc);
  EXPECT_EQ(u8(hi[2]), 0xa4);
  EXPECT_EQ(over, hi);
  EXPECT_EQ(inferno(std::nanf("")), lo);
}

TEST(ReportImages, AbsErrorIsTheMeanOverChannels) {
  Image truth(2, 1, 3, 0.5f), render(2, 1, 3, 0.5f);
  render.at(0, 0, 0) = 0.8f;  // 0.3 off in one channel: 0.1
  render.at(1, 0, 1) = 5.0f;  // clamped to 1 first: 0.5 / 3
  render.at(1, 0, 2) = NAN;   // as the PNG shows it, 0: 0.5 / 3
  const Image e = abs_error(truth, render);
  ASSERT_EQ(e.channels, 1);
  EXPECT_NEAR(e.data[0], 0.1f, 1e-6);
  EXPECT_NEAR(e.data[1], 1.0f / 3, 1e-6);
  EXPECT_THROW(abs_error(truth, Image(3, 1, 3)), Error);
}

TEST(ReportImages, HeatMapColoursTheErrorOnTheScale) {
  Image error(3, 1, 1);
  error.data = {0.0f, 0.05f, 0.5f};  // none, half the scale, beyond it
  const Image back = decode(heat_map_png(error, 0.1f), "heat_map");
  const std::array<float, 3> expected[] = {inferno(0), inferno(128 / 255.0f), inferno(1)};
  for (int x = 0; x < 3; ++x) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(back.at(x, 0, c), std::round(expected[x][c] * 255) / 255.0f) << x << " " << c;
    }
  }
}

TEST(ReportImages, HeatScaleRoundsUpTheQuantile) {
  EXPECT_EQ(heat_scale({}), 0.01f);
  EXPECT_EQ(heat_scale(std::vector<float>(10, 0.0f)), 0.01f);
  EXPECT_EQ(heat_scale(std::vector<float>(10, 0.03f)), 0.05f);
  EXPECT_EQ(heat_scale(std::vector<float>(10, 0.2f)), 0.2f);
  EXPECT_EQ(heat_scale(std::vector<float>(10, 3.0f)), 1.0f);
  // One outlier among 1000 pixels does not set the scale.
  std::vector<float> v(1000, 0.015f);
  v[3] = 0.9f;
  EXPECT_EQ(heat_scale(v), 0.02f);
}

TEST(ReportImages, FitWithinBoxFiltersByAnIntegerFactor) {
  EXPECT_EQ(fit_within(picture(400, 300), 400).width, 400);  // fits: unchanged
  const Image a = fit_within(picture(800, 800), 400);
  EXPECT_EQ(a.width, 400);
  EXPECT_EQ(a.height, 400);
  const Image b = fit_within(picture(900, 1300), 400);  // factor 4 for the taller side
  EXPECT_EQ(b.width, 225);
  EXPECT_EQ(b.height, 325);
}

TEST(ReportImages, DataUriHoldsThePng) {
  const std::string uri = png_data_uri(encode_png(picture(3, 2)));
  // base64 of the PNG signature \x89PNG\r\n\x1a\n begins "iVBORw0KGgo".
  EXPECT_EQ(uri.rfind("data:image/png;base64,iVBORw0KGgo", 0), 0u) << uri.substr(0, 40);
}

// ---- plots --------------------------------------------------------------------------------------

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST(SvgPlot, DrawsAxesTicksTitleAndLegend) {
  Plot p{"Loss <&>", "step", "loss", false, {}};
  PlotSeries s;
  s.label = "raw";
  s.x = {0, 500, 1000};
  s.y = {0.3, 0.1, 0.05};
  p.series = {s};
  const std::string svg = svg_plot(p);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_MENTIONS(svg, "Loss &lt;&amp;&gt;");
  EXPECT_MENTIONS(svg, "<polyline");
  EXPECT_MENTIONS(svg, ">1k</text>");   // an x tick label
  EXPECT_MENTIONS(svg, ">raw</text>");  // the legend
  EXPECT_EQ(svg.find("no data"), std::string::npos);
}

TEST(SvgPlot, NoDrawablePointSaysSo) {
  Plot p{"Loss", "step", "loss", true, {}};
  PlotSeries s;
  s.x = {1, 2};
  s.y = {0, -1};  // nothing is drawable on a log axis
  p.series = {s};
  const std::string svg = svg_plot(p);
  EXPECT_MENTIONS(svg, "no data recorded");
  EXPECT_EQ(svg.find("<polyline"), std::string::npos);
}

TEST(SvgPlot, LogAxisLabelsDecades) {
  Plot p{"Loss", "step", "loss", true, {}};
  PlotSeries s;
  s.x = {1, 2, 3};
  s.y = {0.5, 0.02, 0.004};
  p.series = {s};
  const std::string svg = svg_plot(p);
  for (const char* label : {">0.001<", ">0.01<", ">0.1<", ">1<"}) EXPECT_MENTIONS(svg, label);
}

TEST(SvgPlot, OnePointGetsAMarker) {
  Plot p{"PSNR", "step", "dB", false, {}};
  PlotSeries s;
  s.x = {100};
  s.y = {25};
  p.series = {s};
  EXPECT_EQ(count_of(svg_plot(p), "<circle"), 1u);
}

TEST(SvgPlot, ManyPointsAreThinnedToThePixelColumns) {
  Plot p{"Loss", "step", "loss", false, {}};
  PlotSeries s;
  std::mt19937 rng(1);
  for (int i = 0; i < 200000; ++i) {
    s.x.push_back(i);
    s.y.push_back(1 + double(rng() % 1000) / 1000);
  }
  p.series = {s};
  const std::string svg = svg_plot(p);
  // Two points per column of the 480-pixel plot, about 12 characters each.
  EXPECT_LT(svg.size(), 30000u);
  EXPECT_MENTIONS(svg, "<polyline");
}

}  // namespace
}  // namespace splat
