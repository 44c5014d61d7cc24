// The compact model formats: round trips within each format's precision, byte layouts against
// fixtures written by hand from the specifications, and rendered PSNR against the float model
// (the errors for bad files are in test_export_bad_files.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/gaussians.h"
#include "engine/backend.h"
#include "io/compressed_ply.h"
#include "io/dataset.h"
#include "io/model_file.h"
#include "io/quantize.h"
#include "io/splat_format.h"
#include "io/spz.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/config.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::expect_contains;
using test::file_bytes;
using test::model_in_range;
using Bytes = std::vector<std::uint8_t>;

// For each splat of `decoded`, the splat of `original` nearest to it (formats that reorder).
std::vector<std::size_t> match_by_position(const Gaussians& decoded, const Gaussians& original) {
  std::vector<std::size_t> m(decoded.size());
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    double best = 1e300;
    for (std::size_t j = 0; j < original.size(); ++j) {
      double d = 0;
      for (int k = 0; k < 3; ++k)
        d += std::pow(decoded.means[3 * i + k] - original.means[3 * j + k], 2);
      if (d < best) best = d, m[i] = j;
    }
  }
  return m;
}

// The angle in radians between the rotations of two quaternions.
double rotation_angle(const Gaussians& a, std::size_t i, const Gaussians& b, std::size_t j) {
  const auto qa = unit_quat(a, i), qb = unit_quat(b, j);
  double dot = 0;
  for (int k = 0; k < 4; ++k) dot += qa[k] * qb[k];
  return 2 * std::acos(std::min(1.0, std::fabs(dot)));
}

// Per-field bounds of a round trip; opacity and color are compared after the activation.
struct Precision {
  double position, log_scale, color, opacity, angle, sh;
};

void expect_within(const Gaussians& decoded,
                   const Gaussians& original,
                   const std::vector<std::size_t>& match,
                   const Precision& p) {
  ASSERT_EQ(decoded.size(), original.size());
  const std::size_t K = std::size_t(decoded.K()), Ko = std::size_t(original.K());
  double worst[6] = {};
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    const std::size_t j = match[i];
    for (int k = 0; k < 3; ++k) {
      worst[0] = std::max(worst[0],
                          double(std::fabs(decoded.means[3 * i + k] - original.means[3 * j + k])));
      worst[1] = std::max(worst[1], double(std::fabs(decoded.log_scales[3 * i + k] -
                                                     original.log_scales[3 * j + k])));
      worst[2] = std::max(
          worst[2], kShC0 * std::fabs(decoded.sh[i * K * 3 + k] - original.sh[j * Ko * 3 + k]));
    }
    worst[3] = std::max(worst[3], std::fabs(sigmoid(double(decoded.raw_opacity[i])) -
                                            sigmoid(double(original.raw_opacity[j]))));
    worst[4] = std::max(worst[4], rotation_angle(decoded, i, original, j));
    for (std::size_t k = 1; k < K; ++k)
      for (std::size_t c = 0; c < 3; ++c)
        worst[5] = std::max(worst[5], double(std::fabs(decoded.sh[(i * K + k) * 3 + c] -
                                                       original.sh[(j * Ko + k) * 3 + c])));
  }
  EXPECT_LE(worst[0], p.position);
  EXPECT_LE(worst[1], p.log_scale);
  EXPECT_LE(worst[2], p.color);
  EXPECT_LE(worst[3], p.opacity);
  EXPECT_LE(worst[4], p.angle);
  EXPECT_LE(worst[5], p.sh);
}

// ---- round trips ----

TEST(Export, PlyRoundTripIsExact) {
  const fs::path path = test::temp_dir("export_ply") / "m.ply";
  const Gaussians g = model_in_range(3, 100, 1);
  write_model(path.string(), g, ModelFormat::Ply);
  test::expect_bit_identical(g, read_model(path.string()));
}

TEST(Export, SplatRoundTripWithinItsPrecision) {
  const fs::path path = test::temp_dir("export_splat") / "m.splat";
  const Gaussians g = model_in_range(0, 300, 2);
  write_model(path.string(), g, ModelFormat::Splat);
  EXPECT_EQ(fs::file_size(path), 300u * 32);
  const Gaussians d = read_model(path.string());
  EXPECT_EQ(d.sh_degree, 0);
  // Float positions and scales; colors and opacity to half a step of 1/255; each quaternion
  // component to half a step of 1/128 (an angle below 2 * 2 * 0.5/128).
  expect_within(d, g, match_by_position(d, g),
                {0, 1e-6, 0.5 / 255 + 1e-6, 0.5 / 255 + 1e-6, 0.032, 0});
}

TEST(Export, SplatIsSortedBySizeTimesOpacity) {
  const fs::path path = test::temp_dir("export_splat_order") / "m.splat";
  const Gaussians g = model_in_range(0, 50, 3);
  write_splat(path.string(), g);
  const Gaussians d = read_splat(path.string());
  for (std::size_t i = 1; i < d.size(); ++i) {
    const auto importance = [&](std::size_t k) {
      return std::exp(double(d.log_scales[3 * k]) + d.log_scales[3 * k + 1] +
                      d.log_scales[3 * k + 2]) *
             sigmoid(double(d.raw_opacity[k]));
    };
    EXPECT_GE(importance(i - 1) * (1 + 0.02), importance(i))
        << i;  // opacity is quantized on reading
  }
}

TEST(Export, SpzRoundTripWithinItsPrecision) {
  const fs::path path = test::temp_dir("export_spz") / "m.spz";
  const Gaussians g = model_in_range(3, 300, 4);
  write_model(path.string(), g, ModelFormat::Spz);
  const Gaussians d = read_model(path.string());
  EXPECT_EQ(d.sh_degree, 3);
  std::vector<std::size_t> same(g.size());
  std::iota(same.begin(), same.end(), 0);
  // Positions to half of 1/4096; log scales to half of 1/16; colors to half of 1/(0.15 * 255)
  // in f_dc; alpha half of 1/255; smallest-three components to half of sqrt(1/2)/511 each; SH
  // degree 1 to half a bucket of 8/128 plus rounding, degree 2-3 half of 16/128 plus rounding.
  expect_within(d, g, same,
                {0.5 / 4096 + 1e-7, 0.5 / 16 + 1e-6, kShC0 * 0.5 / (0.15 * 255) + 1e-6,
                 0.5 / 255 + 1e-6, 0.004, 8.5 / 128 + 1e-6});
}

TEST(Export, SpzVersion2RotationsDecode) {
  const Gaussians g = model_in_range(1, 200, 5);
  const Gaussians d = parse_spz_stream("v2", spz_stream(g, 2));
  std::vector<std::size_t> same(g.size());
  std::iota(same.begin(), same.end(), 0);
  // The other fields as in version 3; the angle is checked below instead.
  expect_within(d, g, same,
                {0.5 / 4096 + 1e-7, 0.5 / 16 + 1e-6, kShC0 * 0.5 / (0.15 * 255) + 1e-6,
                 0.5 / 255 + 1e-6, 3.2, 4.5 / 128 + 1e-6});
  // Version 2 keeps x y z of the unit quaternion with w >= 0 to half of 1/127.5 each; w is
  // rebuilt from them, so the angle can be far off where w is near 0 (why version 3 exists).
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto q = unit_quat(g, i);
    const double sign = q[0] < 0 ? -1 : 1;
    for (int k = 1; k < 4; ++k)
      EXPECT_NEAR(d.quats[4 * i + k], sign * q[k], 0.5 / 127.5 + 1e-6) << i;
  }
}

TEST(Export, CompressedPlyRoundTripWithinItsPrecision) {
  const fs::path path = test::temp_dir("export_cply") / "m.compressed.ply";
  const Gaussians g = model_in_range(3, 600, 6);
  write_model(path.string(), g, ModelFormat::CompressedPly);
  const Gaussians d = read_model(path.string());
  EXPECT_EQ(d.sh_degree, 3);
  // Per chunk of 256 in Morton order, positions span at most the model's 4 units, log scales 6,
  // colors 0.9: half a step of 10 bits of those; opacity half of 1/255; 10-bit quaternion
  // components; SH one step of 8/256 (truncated on writing).
  expect_within(d, g, match_by_position(d, g),
                {4.0 * 0.5 / 1023 + 1e-6, 6.0 * 0.5 / 1023 + 1e-5, 0.9 * 0.5 / 255 + 1e-6,
                 0.5 / 255 + 1e-6, 0.004, 8.0 / 256 + 1e-6});
}

TEST(Export, ShDegreeIsCutOrPadded) {
  const Gaussians g = model_in_range(3, 10, 7);
  const Gaussians d = with_sh_degree(g, 1);
  EXPECT_EQ(d.sh_degree, 1);
  ASSERT_EQ(d.sh.size(), 10u * 4 * 3);
  for (std::size_t i = 0; i < 10; ++i)
    for (std::size_t k = 0; k < 12; ++k) EXPECT_EQ(d.sh[i * 12 + k], g.sh[i * 48 + k]);
  // Padding (a degree-0 .splat starting a degree-3 run) adds zero coefficients.
  const Gaussians p = with_sh_degree(d, 2);
  ASSERT_EQ(p.sh.size(), 10u * 9 * 3);
  for (std::size_t i = 0; i < 10; ++i)
    for (std::size_t k = 0; k < 27; ++k)
      EXPECT_EQ(p.sh[i * 27 + k], k < 12 ? g.sh[i * 48 + k] : 0.0f);
  expect_contains(error_of([&] { with_sh_degree(d, 4); }), {"degree 4", "0..3"});
}

// spz's y and z flips are a half turn about x: the SH color of a stored splat seen from the
// turned direction equals the original's (checked on the basis of the CPU reference).
TEST(Export, SpzStoresRubAxes) {
  Gaussians g = model_in_range(3, 1, 8);
  g.means = {0.25f, 0.5f, -1.0f};
  g.quats = {0.9f, 0.1f, 0.3f, -0.2f};
  const Bytes s = spz_stream(g);
  // Position y and z negated: fixed point of (0.25, -0.5, 1.0) with 12 bits.
  const auto coord = [&](int j) {
    std::int32_t v = s[16 + 3 * j] | s[17 + 3 * j] << 8 | s[18 + 3 * j] << 16;
    return (v & 0x800000 ? v - (1 << 24) : v) / 4096.0;
  };
  EXPECT_EQ(coord(0), 0.25);
  EXPECT_EQ(coord(1), -0.5);
  EXPECT_EQ(coord(2), 1.0);
  // Each SH basis function of degree l changes sign under (x, y, z) -> (x, -y, -z) as the table
  // says: compare values of the 3DGS basis at d and at the turned d.
  const double x = 0.3, y = -0.5, z = 0.81;
  const auto basis = [](double x, double y, double z) {
    return std::array<double, 15>{-y,
                                  z,
                                  -x,
                                  x * y,
                                  -y * z,
                                  3 * z * z - 1,
                                  -x * z,
                                  x * x - y * y,
                                  -y * (3 * x * x - y * y),
                                  x * y * z,
                                  -y * (4 * z * z - x * x - y * y),
                                  z * (2 * z * z - 3 * x * x - 3 * y * y),
                                  -x * (4 * z * z - x * x - y * y),
                                  z * (x * x - y * y),
                                  -x * (x * x - 3 * y * y)};
  };
  const auto b = basis(x, y, z), t = basis(x, -y, -z);
  const Gaussians d = parse_spz_stream("s", s);
  // A RUB viewer's coefficients are the stored bytes, (q - 128) / 128; its color at the turned
  // direction must match ours (the decoded model's) at d.
  const std::size_t rest = 15;
  double ours = 0, theirs = 0;
  for (std::size_t k = 0; k < rest; ++k) {
    const std::uint8_t q = s[16 + 9 + 1 + 3 + 3 + 4 + k * 3];  // channel R of coefficient k + 1
    ours += b[k] * d.sh[(k + 1) * 3];
    theirs += t[k] * ((q - 128.0) / 128.0);
  }
  EXPECT_NEAR(ours, theirs, 1e-5);
}

TEST(Export, ConfigListsFormats) {
  Config c;
  EXPECT_EQ(c.output.formats, std::vector<ModelFormat>{ModelFormat::Ply});
  apply_override(c, "output.formats=[\"spz\", \"compressed-ply\", \"splat\"]");
  EXPECT_EQ(
      c.output.formats,
      (std::vector<ModelFormat>{ModelFormat::Spz, ModelFormat::CompressedPly, ModelFormat::Splat}));
  apply_override(c, "output.formats=spz");  // one bare name is a list of one
  EXPECT_EQ(c.output.formats, std::vector<ModelFormat>{ModelFormat::Spz});
  apply_override(c, "output.formats=[]");  // no model file at all
  EXPECT_TRUE(c.output.formats.empty());
  expect_contains(error_of([&] { apply_override(c, "output.formats=[\"ply\", \"jpeg\"]"); }),
                  {"output.formats", "element 1", "jpeg", "compressed-ply"});
  expect_contains(error_of([&] { apply_override(c, "output.formats=[\"spz\", \"spz\"]"); }),
                  {"output.formats", "listed twice"});
  expect_contains(error_of([&] { apply_override(c, "output.formats=3"); }),
                  {"output.formats", "array of strings"});
  Config round;
  apply_config_text(round, "[output]\nformats = [\"splat\", \"ply\"]\n", "t.toml");
  Config back;
  apply_config_text(back, round.to_toml(), "back");
  EXPECT_EQ(back.output.formats, (std::vector<ModelFormat>{ModelFormat::Splat, ModelFormat::Ply}));
}

// ---- byte layouts, from the specifications ----

TEST(Export, SplatBytesOfOneSplat) {
  Gaussians g;
  g.sh_degree = 0;
  g.resize(1);
  g.means = {1.0f, -2.0f, 0.5f};
  g.log_scales = {0.0f, 0.0f, 0.0f};          // scale 1
  g.sh = {0.0f, float(0.5 / kShC0), -10.0f};  // colors 127.5 (rounds to even: 128), 255, 0
  g.raw_opacity = {0.0f};                     // 0.5 * 255 = 127.5: 128
  g.quats = {2.0f, 0.0f, 0.0f, 0.0f};         // normalized (1, 0, 0, 0): 256 clamps to 255
  const fs::path path = test::temp_dir("export_splat_bytes") / "one.splat";
  write_splat(path.string(), g);
  const Bytes expected = {
      0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x3f,  // x y z
      0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f,  // scales
      128,  255,  0,    128,                                                   // rgba
      255,  128,  128,  128};                                                  // w x y z
  EXPECT_EQ(file_bytes(path), expected);
}

TEST(Export, SpzStreamOfOneSplat) {
  Gaussians g;
  g.sh_degree = 1;
  g.resize(1);
  g.means = {1.0f, 2.0f, -0.5f};
  g.log_scales = {0.0f, -10.0f, 1.0f};  // (s + 10) * 16: 160, 0, 176
  g.raw_opacity = {0.0f};               // 127.5 rounds away from zero: 128
  g.quats = {1.0f, 0.0f, 0.0f, 0.0f};   // identity
  g.sh = {0.0f,  1.0f, -1.0f,           // DC: 127.5 + 38.25 dc: 128, 166, 89
          0.5f,  0.0f, 0.0f,            // coefficient 1 (y): flipped to -0.5: 64
          0.25f, 0.0f, 0.0f,            // coefficient 2 (z): flipped to -0.25: 96
          0.25f, 1.0f, -1.0f};          // coefficient 3 (x): kept: 160, 255, 0
  const Bytes expected = {
      0x4e, 0x47, 0x53, 0x50, 3,   0,   0,   0,   1,
      0,    0,    0,    1,    12,  0,   0,  // magic, version 3, 1 point, degree 1, 12 bits
      0x00, 0x10, 0x00,                     // x = 1: 4096
      0x00, 0xe0, 0xff,                     // y = 2 flipped: -8192
      0x00, 0x08, 0x00,                     // z = -0.5 flipped: 2048
      128,                                  // alpha
      128,  166,  89,                       // colors
      160,  0,    176,                      // scales
      0x00, 0x00, 0x00, 0xc0,               // w largest (index 3), the rest 0
      64,   128,  128,  96,   128, 128, 160, 255, 0};  // SH: coefficient-major, channel inner;
                                                       // (q+4)/8*8
  EXPECT_EQ(spz_stream(g), expected);
  // The file is that stream, gzipped.
  const fs::path path = test::temp_dir("export_spz_bytes") / "one.spz";
  write_spz(path.string(), g);
  const Bytes file = file_bytes(path);
  ASSERT_GE(file.size(), 2u);
  EXPECT_EQ(file[0], 0x1f);
  EXPECT_EQ(file[1], 0x8b);
  test::expect_bit_identical(read_spz(path.string()), parse_spz_stream("s", expected));
}

TEST(Export, CompressedPlyBytesOfThreeSplats) {
  Gaussians g;
  g.sh_degree = 0;
  g.resize(3);
  g.means = {1, 2, 3, 0, 0, 0, 0.5f, 1, 1.5f};  // Morton order: the second, the third, the first
  g.log_scales = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  g.quats = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
  g.raw_opacity = {0, 0, 0};
  g.sh = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  const fs::path path = test::temp_dir("export_cply_bytes") / "three.compressed.ply";
  write_compressed_ply(path.string(), g);
  const Bytes bytes = file_bytes(path);
  const std::string header =
      "ply\nformat binary_little_endian 1.0\ncomment Generated by splat\nelement chunk 1\n"
      "property float min_x\nproperty float min_y\nproperty float min_z\nproperty float max_x\n"
      "property float max_y\nproperty float max_z\nproperty float min_scale_x\nproperty float "
      "min_scale_y\n"
      "property float min_scale_z\nproperty float max_scale_x\nproperty float max_scale_y\n"
      "property float max_scale_z\nproperty float min_r\nproperty float min_g\nproperty float "
      "min_b\n"
      "property float max_r\nproperty float max_g\nproperty float max_b\nelement vertex 3\n"
      "property uint packed_position\nproperty uint packed_rotation\nproperty uint packed_scale\n"
      "property uint packed_color\nend_header\n";
  ASSERT_EQ(bytes.size(), header.size() + 18 * 4 + 3 * 16);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + std::ptrdiff_t(header.size())), header);
  float chunk[18];
  std::memcpy(chunk, bytes.data() + header.size(), sizeof chunk);
  const float expected_chunk[18] = {0, 0, 0, 1,    2,    3,    0,    0,    0,
                                    0, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  for (int k = 0; k < 18; ++k) EXPECT_EQ(chunk[k], expected_chunk[k]) << k;
  std::uint32_t words[12];
  std::memcpy(words, bytes.data() + header.size() + sizeof chunk, sizeof words);
  const std::uint32_t identity =
      0u << 30 | 512u << 20 | 512u << 10 | 512u;  // w largest; 0 -> 0.5 * 1023
  const std::uint32_t half_alpha =
      128;  // floor(0.5 * 255 + 0.5); colors all at their (equal) bounds: 0
  const std::uint32_t expected_words[12] = {0,
                                            identity,
                                            0,
                                            half_alpha,  // (0, 0, 0)
                                            1024u << 21 | 512u << 11 | 1024u,
                                            identity,
                                            0,
                                            half_alpha,  // the middle: floor(t * max + 0.5)
                                            0xffffffffu,
                                            identity,
                                            0,
                                            half_alpha};  // (1, 2, 3): every bit set
  for (int k = 0; k < 12; ++k) EXPECT_EQ(words[k], expected_words[k]) << k;
}

TEST(Export, CompressedPlyShElement) {
  const fs::path path = test::temp_dir("export_cply_sh") / "sh.compressed.ply";
  Gaussians g = model_in_range(1, 2, 9);
  const std::size_t K = 4;
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t k = 1; k < K; ++k)
      for (std::size_t c = 0; c < 3; ++c)
        g.sh[(i * K + k) * 3 + c] = float(c) - 1.0f + 0.1f * float(k);
  write_compressed_ply(path.string(), g);
  const Bytes bytes = file_bytes(path);
  const std::string text(bytes.begin(), bytes.end());
  expect_contains(
      text, {"element sh 2\nproperty uchar f_rest_0\n", "property uchar f_rest_8\nend_header\n"});
  // The last 9 bytes are the second splat's f_rest_0..8: channel-major (R of coefficients 1-3,
  // then G, then B), trunc((v / 8 + 0.5) * 256).
  Bytes tail(bytes.end() - 9, bytes.end());
  Bytes expected;
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t k = 1; k < K; ++k)
      expected.push_back(
          std::uint8_t(std::trunc(((double(float(c) - 1.0f + 0.1f * float(k))) / 8 + 0.5) * 256)));
  EXPECT_EQ(tail, expected);
}

// ---- rendered quality against the float model ----

TEST(Export, RenderedPsnrAgainstTheFloatModel) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  Config cfg;
  cfg.backend.type = BackendKind::Cpu;
  cfg.model.init_points = 3000;
  cfg.model.sh_degree = 3;
  auto backend = make_backend(cfg.backend);
  Trainer t(cfg, data, *backend);
  t.initialize();
  TrainState st = backend->state();
  // Colors, opacities and view-dependent terms of a trained model's size.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::size_t K = std::size_t(st.params.K());
  for (std::size_t i = 0; i < st.params.size(); ++i) {
    st.params.raw_opacity[i] = 2 * u(rng);
    for (int k = 0; k < 4; ++k) st.params.quats[4 * i + k] = u(rng);
    for (std::size_t k = 0; k < K * 3; ++k)
      st.params.sh[i * K * 3 + k] = k < 3 ? 1.2f * u(rng) : 0.15f * u(rng);
  }
  RasterSettings rs = final_raster_settings(cfg);
  rs.sh_degree = 3;
  const auto render_all = [&](const Gaussians& g) {
    TrainState s = st;
    s.params = g;
    s.adam_m = s.adam_v = g;
    backend->set_state(s);
    std::vector<Image> out;
    RasterSettings r = rs;
    r.sh_degree = g.sh_degree;
    for (const View& v : data.test) out.push_back(backend->render(v.camera, r));
    return out;
  };
  const std::vector<Image> reference = render_all(st.params);
  const fs::path dir = test::temp_dir("export_psnr");
  // Bounds: the demo scene at 64x64, renders of each decoded model against the float one.
  const std::pair<ModelFormat, double> bounds[] = {{ModelFormat::Ply, 100},
                                                   {ModelFormat::Spz, 35},
                                                   {ModelFormat::CompressedPly, 40},
                                                   {ModelFormat::Splat, 25}};
  for (const auto& [format, bound] : bounds) {
    const std::string path = (dir / model_file_name(format)).string();
    write_model(path, format == ModelFormat::Splat ? with_sh_degree(st.params, 0) : st.params,
                format);
    const std::vector<Image> renders = render_all(read_model(path));
    double mean = 0;
    for (std::size_t v = 0; v < renders.size(); ++v)
      mean += psnr(renders[v], reference[v]) / double(renders.size());
    std::printf("[ info ] %s: %zu bytes, PSNR %.2f dB against the float model\n", path.c_str(),
                std::size_t(fs::file_size(path)), mean);
    EXPECT_GE(mean, bound) << to_string(format);
  }
}

}  // namespace
}  // namespace splat
