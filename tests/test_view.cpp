// splat view: the model blob the page decodes, the server's endpoints, the command's errors, and
// the page itself in headless Chromium against the CPU backend's render.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/demo_scene.h"
#include "io/ply.h"
#include "test_util.h"
#include "view/model_blob.h"
#include "view/server.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Two splats: an axis-aligned one and one turned 90 degrees about z (x and y scales swap).
Gaussians two_splats() {
  Gaussians g;
  g.sh_degree = 1;
  g.resize(2);
  const float s = std::sqrt(0.5f);
  g.means = {1, 2, 3, -1, 0, 0.5f};
  g.log_scales = {std::log(0.5f), std::log(2.0f), 0, std::log(0.5f), std::log(2.0f), 0};
  g.quats = {2, 0, 0, 0, s, 0, 0, s};  // the first unnormalized: normalized on use
  g.raw_opacity = {0, 100};
  std::fill(g.sh.begin(), g.sh.end(), 0.0f);
  g.sh[0] = 1.0f;          // splat 0, DC, red: 0.5 + 0.2821 = 0.7821
  g.sh[3 * 3 + 2] = 0.5f;  // splat 0, band 1 (the view-dependent part), blue
  g.sh[3 * 4 + 1] = 9;     // splat 1, DC, green: above 2, stored as 2
  g.sh[3 * 4 + 2] = -9;    // splat 1, DC, blue: below 0, stored as 0
  return g;
}

template <class T>
T at(const std::string& blob, std::size_t offset) {
  T v;
  std::memcpy(&v, blob.data() + offset, sizeof v);
  return v;
}

TEST(ModelBlob, HeaderCovarianceColourAndOpacity) {
  const std::string blob = view::encode_model_blob(two_splats(), 7, 0);
  ASSERT_EQ(blob.size(), view::kBlobHeaderBytes + 2 * view::kBlobSplatBytes);
  EXPECT_EQ(blob.substr(0, 4), "SPLV");
  EXPECT_EQ(at<std::uint32_t>(blob, 4), 2u);
  EXPECT_EQ(at<std::uint32_t>(blob, 8), 2u);
  EXPECT_EQ(at<std::uint32_t>(blob, 12), 7u);
  EXPECT_EQ(at<std::uint32_t>(blob, 16), 0u);  // SH degree: asked for 0
  const float want_cov[2][6] = {{0.25f, 0, 0, 4, 0, 1}, {4, 0, 0, 0.25f, 0, 1}};
  for (int i = 0; i < 2; ++i) {
    const std::size_t s = view::kBlobHeaderBytes + i * view::kBlobSplatBytes;
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(at<float>(blob, s + 4 * k), two_splats().means[i * 3 + k]);
    for (int k = 0; k < 6; ++k)
      EXPECT_NEAR(at<float>(blob, s + 12 + 4 * k), want_cov[i][k], 1e-6) << i << " " << k;
  }
  const auto rgba = [&](int i, int c) {
    return at<std::uint16_t>(blob, view::kBlobHeaderBytes + i * 44 + 36 + 2 * c);
  };
  EXPECT_EQ(rgba(0, 0), std::lround((0.5 + 0.28209479177387814) / 2 * 65535));
  EXPECT_EQ(rgba(0, 1), std::lround(0.25 * 65535));  // SH 0: colour 0.5
  EXPECT_EQ(rgba(0, 3), std::lround(0.5 * 65535));   // sigmoid(0)
  EXPECT_EQ(rgba(1, 1), 65535);
  EXPECT_EQ(rgba(1, 2), 0);
  EXPECT_EQ(rgba(1, 3), 65535);
}

// The coefficients follow the splats as half floats, (D + 1)^2 x 3 a splat, DC first, in the
// model's order; the degree sent is the lower of the model's and the one asked for.
TEST(ModelBlob, ShCoefficientsAsHalfFloatsUpToTheDegreeSent) {
  Gaussians g = two_splats();  // degree 1: K = 4
  for (std::size_t k = 0; k < g.sh.size(); ++k) g.sh[k] = 0.25f * float(k) - 3;
  for (int asked : {1, 3}) {
    const std::string blob = view::encode_model_blob(g, 1, asked);
    ASSERT_EQ(blob.size(), view::kBlobHeaderBytes + 2 * (view::kBlobSplatBytes + 4 * 3 * 2));
    EXPECT_EQ(at<std::uint32_t>(blob, 16), 1u);
    const std::size_t first = view::kBlobHeaderBytes + 2 * view::kBlobSplatBytes;
    for (std::size_t k = 0; k < g.sh.size(); ++k)  // quarters below 2^11 are exact halves
      EXPECT_EQ(at<std::uint16_t>(blob, first + 2 * k), view::half_bits(g.sh[k])) << k;
  }
  EXPECT_EQ(view::half_bits(-3.0f), 0xC200);
  EXPECT_EQ(view::half_bits(0.25f * 23 - 3), 0x4180);  // 2.75

  // A degree-3 model sent at degree 1: each splat's first 4 of its 16 coefficients.
  Gaussians g3 = g;
  g3.sh_degree = 3;
  g3.resize(2);
  for (std::size_t k = 0; k < g3.sh.size(); ++k) g3.sh[k] = 0.25f * float(k % 61) - 3;
  const std::string blob = view::encode_model_blob(g3, 1, 1);
  ASSERT_EQ(blob.size(), view::kBlobHeaderBytes + 2 * (view::kBlobSplatBytes + 4 * 3 * 2));
  const std::size_t first = view::kBlobHeaderBytes + 2 * view::kBlobSplatBytes;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 12; ++k)
      EXPECT_EQ(at<std::uint16_t>(blob, first + 2 * (i * 12 + k)),
                view::half_bits(g3.sh[i * 48 + k]))
          << i << " " << k;
}

// Bands whose coefficients are all zero (during training, those not yet active) are not sent.
TEST(ModelBlob, AllZeroHighestBandsAreLeftOut) {
  Gaussians g = two_splats();
  g.sh_degree = 3;
  g.resize(2);
  std::fill(g.sh.begin(), g.sh.end(), 0.0f);
  const auto sent_degree = [&] { return at<std::uint32_t>(view::encode_model_blob(g, 1), 16); };
  EXPECT_EQ(sent_degree(), 0u);
  g.sh[16 * 3 + 8 * 3 + 1] = -0.1f;  // splat 1, the last coefficient of band 2, green
  EXPECT_EQ(sent_degree(), 2u);
  g.sh[16 * 3 + 15 * 3 + 2] = 1e-8f;  // splat 1, the last coefficient of band 3, blue
  EXPECT_EQ(sent_degree(), 3u);
  EXPECT_EQ(view::encode_model_blob(g, 1).size(),
            view::kBlobHeaderBytes + 2 * (view::kBlobSplatBytes + 16 * 3 * 2));
}

TEST(ModelBlob, HalfBitsRoundToNearestEven) {
  EXPECT_EQ(view::half_bits(0.0f), 0x0000);
  EXPECT_EQ(view::half_bits(-0.0f), 0x8000);
  EXPECT_EQ(view::half_bits(1.0f), 0x3C00);
  EXPECT_EQ(view::half_bits(-2.0f), 0xC000);
  EXPECT_EQ(view::half_bits(0.1f), 0x2E66);      // 0.0999755859375, the nearest half
  EXPECT_EQ(view::half_bits(65504.0f), 0x7BFF);  // the largest half
  EXPECT_EQ(view::half_bits(65520.0f), 0x7C00);  // halfway above it: infinity
  EXPECT_EQ(view::half_bits(1e6f), 0x7C00);
  EXPECT_EQ(view::half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie: to even
  EXPECT_EQ(view::half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie: to even
  EXPECT_EQ(view::half_bits(2.0f - std::ldexp(1.0f, -12)), 0x4000);      // carry into the exponent
  EXPECT_EQ(view::half_bits(std::ldexp(1.0f, -14)), 0x0400);             // the smallest normal
  EXPECT_EQ(view::half_bits(std::ldexp(1.0f, -24)), 0x0001);             // the smallest subnormal
  EXPECT_EQ(view::half_bits(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 ulp: to even
  EXPECT_EQ(view::half_bits(std::ldexp(1.0f, -25)), 0x0000);             // half an ulp: to even
  EXPECT_EQ(view::half_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(view::half_bits(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(view::half_bits(std::nanf("")) & 0x7C00, 0x7C00);
  EXPECT_NE(view::half_bits(std::nanf("")) & 0x03FF, 0);
}

TEST(ModelBlob, ZeroQuaternionIsAZeroCovariance) {
  Gaussians g = two_splats();
  std::fill(g.quats.begin(), g.quats.begin() + 4, 0.0f);
  const std::string blob = view::encode_model_blob(g, 1);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(at<float>(blob, view::kBlobHeaderBytes + 12 + 4 * k), 0.0f);
}

// ---- the server ---------------------------------------------------------------------------------

json get_json(httplib::Client& c, const std::string& path) {
  const auto r = c.Get(path);
  if (!r || r->status != 200) {
    ADD_FAILURE() << path << ": no 200 response";
    return {};
  }
  return json::parse(r->body);
}

TEST(ViewServer, ServesThePageTheModelAndItsSnapshots) {
  view::ViewServer server({.bind = "127.0.0.1", .port = 0});
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/");
  httplib::Client client("127.0.0.1", server.port());
  const auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_MENTIONS(page->body, "viewer.js");
  EXPECT_MENTIONS(page->get_header_value("Content-Type"), "text/html");
  for (const char* file :
       {"/viewer.js", "/renderer.js", "/camera.js", "/sort_worker.js", "/style.css"}) {
    const auto r = client.Get(file);
    ASSERT_TRUE(r) << file;
    EXPECT_EQ(r->status, 200) << file;
    EXPECT_GT(r->body.size(), 100u) << file;
  }
  EXPECT_EQ(client.Get("/nothing")->status, 404);

  EXPECT_GT(server.seconds_since_poll(), 1e9);  // nobody polled yet
  json info = get_json(client, "/info");
  EXPECT_LT(server.seconds_since_poll(), 5.0);
  EXPECT_EQ(info["version"], 0);
  EXPECT_EQ(info["live"], false);
  server.publish(two_splats());
  info = get_json(client, "/info");
  EXPECT_EQ(info["version"], 1);
  EXPECT_EQ(info["splats"], 2);
  EXPECT_EQ(info["sh_degree"], 1);
  const auto model = client.Get("/model");
  ASSERT_TRUE(model);
  EXPECT_EQ(model->body, view::encode_model_blob(two_splats(), 1));
  EXPECT_EQ(at<std::uint32_t>(model->body, 16), 1u);  // the model's degree
  EXPECT_EQ(client.Get("/model?sh=0")->body, view::encode_model_blob(two_splats(), 1, 0));
  EXPECT_EQ(client.Get("/model")->body, model->body);  // the cache keeps the degree apart
  for (const char* bad : {"/model?sh=4", "/model?sh=-1", "/model?sh=x", "/model?sh="})
    EXPECT_EQ(client.Get(bad)->status, 400) << bad;
  server.publish(Gaussians{});
  EXPECT_EQ(at<std::uint32_t>(client.Get("/model")->body, 12), 2u);

  server.set_progress({{"step", 5}, {"total", 10}});
  EXPECT_EQ(get_json(client, "/info")["live"], true);
  EXPECT_EQ(get_json(client, "/metrics"), json::array());
  const fs::path metrics = test::temp_dir("view_metrics") / "metrics.jsonl";
  std::ofstream(metrics)
      << "{\"step\": 1, \"loss\": 0.5}\n{\"step\": 2, \"los";  // a torn last line
  server.set_metrics_file(metrics.string());
  EXPECT_EQ(get_json(client, "/metrics"), json::parse("[{\"step\": 1, \"loss\": 0.5}]"));
}

TEST(ViewServer, SceneListsTheDatasetCameras) {
  Dataset data;
  View v;
  v.name = "r_3";
  v.camera.width = 40;
  v.camera.height = 30;
  v.camera.fx = 50;
  v.camera.t = {1, 2, 3};
  data.test.push_back(v);
  view::ViewServer server({.port = 0});
  server.set_scene(&data, {1, 0.5f, 0});
  httplib::Client client("127.0.0.1", server.port());
  const json scene = get_json(client, "/scene");
  EXPECT_EQ(scene["background"], json::parse("[1.0, 0.5, 0.0]"));
  ASSERT_EQ(scene["cameras"].size(), 1u);
  EXPECT_EQ(scene["cameras"][0]["name"], "r_3");
  EXPECT_EQ(scene["cameras"][0]["split"], "test");
  EXPECT_EQ(scene["cameras"][0]["width"], 40);
  EXPECT_EQ(scene["cameras"][0]["R"], json::parse("[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]"));
  EXPECT_EQ(scene["cameras"][0]["t"], json::parse("[1.0, 2.0, 3.0]"));
}

TEST(ViewServer, APortInUseIsAClearError) {
  view::ViewServer first({.port = 0});
  test::expect_contains(test::error_of([&] { view::ViewServer second({.port = first.port()}); }),
                        {"127.0.0.1:" + std::to_string(first.port()), "--port"});
}

TEST(ViewCli, MissingModelOrDataIsAnError) {
  auto r = test::run_splat("view /nonexistent/model.ply");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_MENTIONS(r.output, "/nonexistent/model.ply");
  const fs::path dir = test::temp_dir("view_cli");
  write_ply((dir / "model.ply").string(), two_splats());
  r = test::run_splat(
      "view " + (dir / "model.ply").string() + " " + (dir / "no_data").string() + " --port 0", 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_MENTIONS(r.output, "no_data");
}

// ---- in a browser -------------------------------------------------------------------------------

// Skips (with the reason) when the browser test's tools are absent; CI installs them
// (scripts/deps.sh --test).
std::string browser_missing() {
  for (const char* tool : {"/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"})
    if (!fs::exists(tool)) return std::string(tool) + " is absent";
  if (test::run_command("/usr/bin/python3 -c 'import selenium'").exit_code != 0)
    return "python3-selenium is absent";
  return "";
}

// The browser tests' scene: small, few views, no supersampling (seconds to write).
const fs::path& browser_scene() {
  static const fs::path dir = [] {
    const fs::path d = test::temp_dir("view_browser_scene") / "scene";
    DemoSceneOptions o;
    o.width = 120;
    o.height = 90;
    o.train_views = 16;
    o.test_views = 2;
    o.supersample = 1;
    write_demo_scene(d.string(), o);
    return d;
  }();
  return dir;
}

std::string splat_binary() {
  const char* bin = std::getenv("SPLAT_BIN");
  return bin ? bin : SPLAT_BINARY;
}

std::string browser_script(const std::string& name) {
  return "timeout 600 /usr/bin/python3 " + std::string(SPLAT_SOURCE_DIR) + "/tests/browser/" + name;
}

// A model trained for a few steps on the CPU, rendered by the CPU backend at the test cameras: the
// page must draw the same pictures at those cameras (measured: 54-58 dB; the bound leaves room for
// SwiftShader's float arithmetic and the 16-bit depth sort's order of near-equal depths) and follow
// input (tests/browser/view_page.py).
TEST(ViewBrowserSlow, PageMatchesTheCpuRenderAndFollowsInput) {
  if (const std::string why = browser_missing(); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = test::temp_dir("view_browser");
  const std::string scene = browser_scene().string();
  auto r = test::run_splat(
      "train " + scene + " --out " + (dir / "run").string() +
          " --set train.iterations=60 --set model.init_points=3000 --set train.eval_every=0",
      300);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string model = (dir / "run" / "checkpoint.ckpt").string();
  r = test::run_splat("render " + model + " " + scene + " --out " + (dir / "cpu").string(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command(browser_script("view_page.py") + " --min-psnr 40 --splat " +
                        splat_binary() + " --model " + model + " --data " + scene + " --renders " +
                        (dir / "cpu").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::printf("%s\n", r.output.c_str());
}

// View-dependent colour: a random SH-degree-3 model whose higher bands are strong. The page at the
// test cameras matches the CPU render (measured: 52.3 dB at both; a sign flipped in one band-1
// term gives 42 and 32 dB) and, with ?sh=0, does not (22.3 dB; the bound is 30);
// tests/browser/view_sh.py.
TEST(ViewBrowserSlow, PageEvaluatesViewDependentColour) {
  if (const std::string why = browser_missing(); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = test::temp_dir("view_browser_sh");
  const auto r =
      test::run_command(browser_script("view_sh.py") + " --min-psnr 40 --splat " + splat_binary() +
                        " --data " + browser_scene().string() + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::printf("%s\n", r.output.c_str());
}

// `splat view MODEL` without a dataset: the first frame shows the model from outside its robust
// bounds, large and centred, on a canvas of the window's shape, also after a resize
// (tests/browser/view_no_data.py).
TEST(ViewBrowserSlow, ModelWithoutDataOpensAroundIt) {
  if (const std::string why = browser_missing(); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = test::temp_dir("view_browser_no_data");
  const auto r = test::run_command(browser_script("view_no_data.py") + " --splat " +
                                   splat_binary() + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::printf("%s\n", r.output.c_str());
}

// `splat train --view` during a short CPU run: the snapshot version and the step advance, the page
// loads the newer snapshots, and the run serves its final model until SIGINT
// (tests/browser/live_view.py).
TEST(ViewBrowserSlow, LiveTrainingPublishesAdvancingSnapshots) {
  if (const std::string why = browser_missing(); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = test::temp_dir("view_live");
  const auto r =
      test::run_command(browser_script("live_view.py") + " --browser --splat " + splat_binary() +
                        " --data " + browser_scene().string() + " --out " + (dir / "run").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::printf("%s\n", r.output.c_str());
  EXPECT_TRUE(fs::exists(dir / "run" / "model.ply"));
}

}  // namespace
}  // namespace splat
