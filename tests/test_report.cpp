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
#include "report/report.h"
#include "report/report_images.h"
#include "report/svg_plot.h"
#include "test_util.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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

// ---- the page -----------------------------------------------------------------------------------

// metrics.jsonl records as training writes them: every 10 steps, an evaluation every 100.
std::vector<json> history(int steps) {
  std::vector<json> h;
  for (int s = 10; s <= steps; s += 10) {
    json r = {{"step", s},
              {"elapsed", s * 0.01},
              {"loss", 0.2 / std::sqrt(double(s))},
              {"loss_smoothed", 0.19 / std::sqrt(double(s))},
              {"splats", 1000 + 5 * s},
              {"its_per_s", 95.0}};
    if (s % 100 == 0) r["eval"] = {{"psnr", 20 + s / 100.0}, {"ssim", 0.8}};
    h.push_back(r);
  }
  return h;
}

json metrics() {
  return {{"psnr", 31.4159},
          {"ssim", 0.9712},
          {"cc_psnr", 32.5051},
          {"num_splats", 1234567},
          {"train_seconds", 754.0},
          {"ms_per_iter", 25.13},
          {"peak_memory_bytes", 2147483648.0},
          {"iterations", 1000},
          {"backend", "cuda"}};
}

TEST(Report, PicturedViewsAreTheLowestPsnrInOrder) {
  EXPECT_EQ(pictured_views({30, 20, 25}, 5), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(pictured_views({30, 20, 25, NAN, 40}, 3), (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_TRUE(pictured_views({30, 20}, 0).empty());
}

// Three views of different quality with their pictures; the images live as long as the test.
struct Views {
  Image truth = picture(64, 48);
  std::vector<Image> renders = {picture(64, 48, 0.01f), picture(64, 48, 0.2f),
                                picture(64, 48, 0.05f)};
  std::vector<ReportView> list() const {
    return {{"r_0", 35.0, 0.99, &truth, &renders[0]},
            {"r_1", 18.5, 0.70, &truth, &renders[1]},
            {"r_2", 27.0, 0.90, &truth, &renders[2]}};
  }
};

ReportInput full_input(const Views& v) {
  ReportInput in;
  in.title = "data/lego";
  in.history = history(1000);
  in.metrics = metrics();
  in.views = v.list();
  in.config_toml = "[train]\niterations = 1000\n";
  return in;
}

// Every attribute that could load something names nothing outside the page.
void expect_self_contained(const std::string& page) {
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("src=\"/"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  for (const std::string attr : {"src=\"", "href=\""}) {
    for (auto p = page.find(attr); p != std::string::npos; p = page.find(attr, p + 1)) {
      const std::string value = page.substr(p + attr.size(), 12);
      EXPECT_TRUE(value.rfind("data:", 0) == 0 || value.rfind("#", 0) == 0) << attr << value;
    }
  }
}

TEST(Report, HasSummaryPlotsTableAndPictures) {
  const Views v;
  const std::string page = report_html(full_input(v));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* text : {"31.42 dB", "0.9712", "32.51 dB", "1,234,567", "1,000", "12 min 34 s",
                           "25.13", "2.00 GiB", "cuda", "data/lego"}) {
    EXPECT_MENTIONS(page, text);
  }
  EXPECT_EQ(count_of(page, "<svg class=\"plot\""), 4u);
  for (const char* title : {"Training loss", "Test PSNR", "Splat count", "Training speed"}) {
    EXPECT_MENTIONS(page, std::string("<title>") + title + "</title>");
  }
  EXPECT_EQ(page.find("no data recorded"), std::string::npos);
  EXPECT_EQ(count_of(page, "<figure class=\"view\""), 3u);
  EXPECT_EQ(count_of(page, "src=\"data:image/png;base64,iVBORw0KGgo"), 9u);  // one triple each
  EXPECT_MENTIONS(page, "<details>");
  EXPECT_MENTIONS(page, "iterations = 1000");
  EXPECT_EQ(page.find("GPU time per stage"), std::string::npos);  // no "timing" in metrics
  expect_self_contained(page);
}

TEST(Report, TableAndPicturesListWorstViewFirst) {
  const Views v;
  const std::string page = report_html(full_input(v));
  const auto r0 = page.find(">r_0</a>"), r1 = page.find(">r_1</a>"), r2 = page.find(">r_2</a>");
  ASSERT_NE(r1, std::string::npos);
  EXPECT_LT(r1, r2);
  EXPECT_LT(r2, r0);
  EXPECT_MENTIONS(page, "<tr class=\"worst\"><td data-v=\"1\">1</td>");
  EXPECT_MENTIONS(page, "href=\"#view-1\"");
  // The pictures come worst first too.
  const auto f0 = page.find("id=\"view-0\""), f1 = page.find("id=\"view-1\""),
             f2 = page.find("id=\"view-2\"");
  ASSERT_NE(f1, std::string::npos);
  EXPECT_LT(f1, f2);
  EXPECT_LT(f2, f0);
}

TEST(Report, PicturesAtMostMaxViewsOfLowestPsnr) {
  const Views v;
  ReportInput in = full_input(v);
  in.max_views = 2;
  const std::string page = report_html(in);
  EXPECT_EQ(count_of(page, "src=\"data:image/png;base64,"), 6u);
  EXPECT_MENTIONS(page, "id=\"view-1\"");
  EXPECT_MENTIONS(page, "id=\"view-2\"");
  EXPECT_EQ(page.find("id=\"view-0\""), std::string::npos);
  EXPECT_MENTIONS(page, "2 of 3 test views pictured");
  EXPECT_MENTIONS(page, "1 more were left out");
}

TEST(Report, LargePicturesAreDownscaled) {
  const Image truth = picture(900, 600), render = picture(900, 600, 0.1f);
  ReportInput in;
  in.views = {{"big", 20, 0.8, &truth, &render}};
  const std::string page = report_html(in);
  EXPECT_EQ(count_of(page, "width=\"300\" height=\"200\""), 3u);  // factor 3 fits 400
}

TEST(Report, ViewsWithoutImagesAreListedNotPictured) {
  const Views v;
  ReportInput in = full_input(v);
  in.views[0].render = nullptr;
  const Image odd = picture(32, 32);
  in.views[2].render = &odd;  // not the truth's size
  const std::string page = report_html(in);
  EXPECT_EQ(count_of(page, "<figure class=\"view\""), 1u);
  EXPECT_MENTIONS(page, "2 had no images");
  EXPECT_MENTIONS(page, ">r_0</td>");
}

TEST(Report, EscapesNamesTitleAndConfig) {
  const Views v;
  ReportInput in = full_input(v);
  in.title = "data/<lego>&co";
  in.views[1].name = "<img src=x onerror=alert(1)>&\"";
  in.config_toml = "name = \"</pre><script>\"\n";
  const std::string page = report_html(in);
  EXPECT_MENTIONS(page, "data/&lt;lego&gt;&amp;co");
  EXPECT_MENTIONS(page, "&lt;img src=x onerror=alert(1)&gt;&amp;&quot;");
  EXPECT_MENTIONS(page, "name = &quot;&lt;/pre&gt;&lt;script&gt;&quot;");
  EXPECT_EQ(page.find("<img src=x"), std::string::npos);
  EXPECT_EQ(page.find("</pre><script>"), std::string::npos);
  EXPECT_EQ(count_of(page, "<script>"), 1u);  // the page's own
}

TEST(Report, EmptyInputStillMakesAPage) {
  const std::string page = report_html(ReportInput{});
  EXPECT_EQ(count_of(page, "<svg class=\"plot\""), 4u);
  EXPECT_EQ(count_of(page, "no data recorded"), 3u);
  EXPECT_MENTIONS(page, "no test evaluations recorded");
  EXPECT_MENTIONS(page, "No test views.");
  EXPECT_MENTIONS(page, "No test view images to show.");
  EXPECT_MENTIONS(page, "(not recorded)");
  EXPECT_GE(count_of(page, "&mdash;"), 8u);  // every summary value
  EXPECT_EQ(page.find("data:image"), std::string::npos);
  expect_self_contained(page);
}

TEST(Report, RecordsWithMissingOrOddFieldsAreSkipped) {
  ReportInput in;
  in.metrics = {{"psnr", 0.0}, {"ssim", 0.0}, {"test_views", json::array()}, {"backend", 3}};
  in.history = {json::array(),
                json{{"loss", 0.5}},                             // no step
                json{{"step", "ten"}, {"loss", 0.5}},            // step not a number
                json{{"step", 10}, {"loss", 0.4}, {"eval", 5}},  // eval not an object
                json{{"step", 20}, {"loss", nullptr}, {"splats", 100}},
                json{{"step", 30}, {"loss", 0.3}, {"eval", {{"ssim", 0.5}}}}};
  const std::string page = report_html(in);
  EXPECT_EQ(count_of(page, "no data recorded"), 1u);  // only it/s has no point at all
  EXPECT_MENTIONS(page, "no test evaluations recorded");
  EXPECT_MENTIONS(page, "No test views: PSNR and SSIM were not measured.");
  EXPECT_EQ(page.find("0.00 dB"), std::string::npos);
}

TEST(Report, TableFallsBackToTheViewsInMetrics) {
  ReportInput in;
  in.metrics = metrics();
  in.metrics["test_views"] = {{{"name", "a"}, {"psnr", 30.0}, {"ssim", 0.9}},
                              {{"name", "b<"}, {"psnr", 20.0}}};
  const std::string page = report_html(in);
  EXPECT_MENTIONS(page, ">b&lt;</td>");
  EXPECT_LT(page.find(">b&lt;</td>"), page.find(">a</td>"));
  EXPECT_MENTIONS(page, "No test view images to show.");
}

TEST(Report, ShowsPerStageTimesWhenMetricsHaveThem) {
  ReportInput in;
  in.metrics = metrics();
  in.metrics["timing"] = {{{"stage", "project_fwd"}, {"mean_ms", 1.5}, {"share", 0.25}},
                          {{"stage", "rasterize<bwd>"}, {"mean_ms", 4.5}}};
  const std::string page = report_html(in);
  EXPECT_MENTIONS(page, "GPU time per stage");
  EXPECT_MENTIONS(page, ">project_fwd</td><td>1.500</td><td>25.0%</td>");
  EXPECT_MENTIONS(page, ">rasterize&lt;bwd&gt;</td><td>4.500</td><td>75.0%</td>");  // share derived
  EXPECT_MENTIONS(page, ">total</th><th>6.000</th>");
}

TEST(Report, WritesTheFileAtomically) {
  const Views v;
  const ReportInput in = full_input(v);
  const fs::path dir = test::temp_dir("report_write");
  write_report_html((dir / "report.html").string(), in);
  EXPECT_EQ(read_text(dir / "report.html"), report_html(in));
  EXPECT_FALSE(fs::exists(dir / "report.html.tmp"));
  test::expect_contains(
      test::error_of([&] { write_report_html((dir / "no" / "report.html").string(), in); }),
      {"report.html", "cannot create"});
}

// Tags balance (void elements aside, SVG's self-closed ones allowed) and ids are unique, as
// Python's own HTML tokenizer reads the page.
constexpr const char* kWellFormed = R"(import sys
from html.parser import HTMLParser
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
class Check(HTMLParser):
    def __init__(self):
        super().__init__()
        self.open, self.ids, self.errors = [], set(), []
    def handle_starttag(self, tag, attrs):
        self.note_id(attrs)
        if tag not in VOID:
            self.open.append((tag, self.getpos()))
    def handle_startendtag(self, tag, attrs):
        self.note_id(attrs)
    def handle_endtag(self, tag):
        if not self.open or self.open[-1][0] != tag:
            self.errors.append("%s: </%s> but open: %s" % (self.getpos(), tag, self.open[-3:]))
        else:
            self.open.pop()
    def note_id(self, attrs):
        for k, v in attrs:
            if k == "id":
                if v in self.ids:
                    self.errors.append("duplicate id " + v)
                self.ids.add(v)
c = Check()
c.feed(open(sys.argv[1], encoding="utf-8").read())
c.close()
if c.open:
    c.errors.append("unclosed: %s" % c.open)
print("\n".join(c.errors) or "ok")
sys.exit(1 if c.errors else 0)
)";

TEST(Report, IsWellFormedHtml) {
  if (test::run_command("command -v python3").exit_code != 0) GTEST_SKIP() << "no python3";
  const Views v;
  const fs::path dir = test::temp_dir("report_wellformed");
  std::ofstream(dir / "check.py") << kWellFormed;
  ReportInput full = full_input(v);
  full.metrics["timing"] = {{{"stage", "a"}, {"mean_ms", 1.0}}};
  const std::pair<const char*, ReportInput> pages[] = {{"full", full}, {"empty", ReportInput{}}};
  for (const auto& [name, in] : pages) {
    const fs::path page = dir / (std::string(name) + ".html");
    write_report_html(page.string(), in);
    const auto r =
        test::run_command("python3 " + (dir / "check.py").string() + " " + page.string());
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.output;
  }
}

// Opens the page as a browser would, from disk, when Chromium is installed.
TEST(Report, LoadsInHeadlessChromium) {
  const char* chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) GTEST_SKIP() << chromium << " is absent";
  const Views v;
  const fs::path page = test::temp_dir("report_chromium") / "report.html";
  write_report_html(page.string(), full_input(v));
  const auto r = test::run_command(std::string("timeout 120 ") + chromium +
                                   " --headless --no-sandbox --disable-gpu --dump-dom file://" +
                                   page.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "<svg class=\"plot\""), 4u) << r.output.substr(0, 2000);
  EXPECT_EQ(count_of(r.output, "<figure class=\"view\""), 3u);
  EXPECT_MENTIONS(r.output, "Training report");
}

}  // namespace
}  // namespace splat
