// Loss masks and 8-bit training images: the masked loss (cpu/loss_cpu.h) ignores what lies under
// the mask and is today's loss without one; the loaders read COLMAP's masks/ folder,
// transforms.json's mask_path and (data.alpha_mask) RGBA alpha, and name the file of a bad mask;
// RGBA kept in 8 bits composites to the float target the loaders used to compute on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/image.h"
#include "cpu/loss_cpu.h"
#include "engine/target.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/init.h"
#include "train/trainer.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using test::error_of;

// ---- the masked loss ---------------------------------------------------------------------------

struct LossCase {
  int w = 37, h = 29;
  std::vector<float> image, target, weight;  // [H, W, 3], [H, W, 3], [H, W]
};

LossCase loss_case(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  LossCase c;
  const std::size_t np = std::size_t(c.w) * c.h;
  for (std::size_t i = 0; i < np * 3; ++i) {
    c.target.push_back(0.5f + 0.4f * std::sin(0.3f * float(i % 111)));
    c.image.push_back(std::clamp(c.target.back() + 0.1f * (u(rng) - 0.5f), 0.0f, 1.0f));
  }
  for (int y = 0; y < c.h; ++y)
    for (int x = 0; x < c.w; ++x)
      c.weight.push_back((x - 12) * (x - 12) + (y - 15) * (y - 15) < 40 || x > 30 ? 0.0f : 1.0f);
  return c;
}

TEST(Masks, TargetUnderTheMaskChangesNeitherLossNorGradient) {
  const LossCase c = loss_case(1);
  const auto a = cpu::photometric_loss(c.image, c.target, c.w, c.h, 0.2f, true, LossKind::L1Ssim,
                                       c.weight.data());
  std::vector<float> other = c.target;
  std::size_t changed = 0;
  for (std::size_t p = 0; p < c.weight.size(); ++p)
    if (c.weight[p] == 0)
      for (int ch = 0; ch < 3; ++ch) other[3 * p + ch] = 1.0f - other[3 * p + ch], ++changed;
  ASSERT_GT(changed, 300u);
  const auto b = cpu::photometric_loss(c.image, other, c.w, c.h, 0.2f, true, LossKind::L1Ssim,
                                       c.weight.data());
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.l1, b.l1);
  EXPECT_EQ(a.ssim, b.ssim);
  EXPECT_EQ(a.v_image, b.v_image);
  // Nor does the render there, and its gradient there is zero.
  for (std::size_t p = 0; p < c.weight.size(); ++p) {
    if (c.weight[p] != 0) continue;
    for (int ch = 0; ch < 3; ++ch) ASSERT_EQ(a.v_image[3 * p + ch], 0.0f);
  }
  // The unmasked loss does see the change (the test can fail).
  const auto full_a = cpu::photometric_loss(c.image, c.target, c.w, c.h, 0.2f, false);
  const auto full_b = cpu::photometric_loss(c.image, other, c.w, c.h, 0.2f, false);
  EXPECT_NE(full_a.loss, full_b.loss);
}

TEST(Masks, AllOnesMaskIsExactlyTheUnmaskedLoss) {
  const LossCase c = loss_case(2);
  const std::vector<float> ones(c.weight.size(), 1.0f);
  const auto a = cpu::photometric_loss(c.image, c.target, c.w, c.h, 0.2f, true);
  const auto b =
      cpu::photometric_loss(c.image, c.target, c.w, c.h, 0.2f, true, LossKind::L1Ssim, ones.data());
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.l1, b.l1);
  EXPECT_EQ(a.ssim, b.ssim);
  EXPECT_EQ(a.v_image, b.v_image);
}

// L1 is the mean over the kept pixels, so a perfect render of the kept pixels costs nothing
// whatever lies elsewhere; and the masked gradient matches central differences.
TEST(Masks, MaskedLossIsAMeanOverTheKeptPixels) {
  LossCase c = loss_case(3);
  std::vector<float> image = c.target;
  for (std::size_t p = 0; p < c.weight.size(); ++p)
    if (c.weight[p] == 0)
      for (int ch = 0; ch < 3; ++ch) image[3 * p + ch] = 0.0f;
  const auto r = cpu::photometric_loss(image, c.target, c.w, c.h, 0.2f, false, LossKind::L1Ssim,
                                       c.weight.data());
  EXPECT_EQ(r.l1, 0.0f);
  EXPECT_NEAR(r.ssim, 1.0f, 1e-6f);

  const std::vector<double> x(c.image.begin(), c.image.end()), t(c.target.begin(), c.target.end()),
      w(c.weight.begin(), c.weight.end());
  const auto g =
      cpu::photometric_loss<double>(x, t, c.w, c.h, 0.2, true, LossKind::L1Ssim, w.data());
  for (const std::size_t i :
       {std::size_t(3 * (5 * c.w + 5) + 1), std::size_t(3 * (22 * c.w + 12) + 2)}) {
    ASSERT_EQ(w[i / 3], 1.0);
    std::vector<double> xp = x, xm = x;
    const double h = 1e-6;
    xp[i] += h, xm[i] -= h;
    const double fd =
        (cpu::photometric_loss<double>(xp, t, c.w, c.h, 0.2, false, LossKind::L1Ssim, w.data())
             .loss -
         cpu::photometric_loss<double>(xm, t, c.w, c.h, 0.2, false, LossKind::L1Ssim, w.data())
             .loss) /
        (2 * h);
    EXPECT_NEAR(g.v_image[i], fd, 1e-6 * std::abs(fd) + 1e-9) << i;
  }
}

// ---- 8-bit targets -----------------------------------------------------------------------------

// The composite formed from the bytes equals what the loaders computed on the host before images
// were kept in 8 bits: decode to float, then composite_on.
TEST(Masks, RgbaBytesCompositeLikeTheHostDid) {
  const fs::path dir = test::temp_dir("masks_rgba");
  Image rgba(13, 7, 4);
  std::mt19937 rng(5);
  for (float& v : rgba.data) v = float(rng() % 256) / 255.0f;
  write_png((dir / "a.png").string(), rgba);
  const Image decoded = read_image((dir / "a.png").string());
  const std::array<float, 3> bg{1.0f, 0.25f, 0.0f};
  Image8 bytes = to_image8(decoded);
  bytes.background = bg;
  EXPECT_EQ(target_image(bytes).data, composite_on(decoded, bg).data);
}

// ---- the cpu backend ---------------------------------------------------------------------------

// One step of the cpu backend on `target` from a fixed model: the parameters after it.
Gaussians after_one_step(const Dataset& data, const Image8& target) {
  Config cfg;
  cfg.model.init_points = 2000;
  cfg.backend.type = BackendKind::Cpu;
  TrainState st;
  st.params = initialize_model(cfg.model, data, 7);
  st.adam_m = st.adam_v = st.params;
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group(
        [](const char*, std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); });
  StepSettings s;
  s.raster = final_raster_settings(cfg);
  s.raster.sh_degree = 0;
  s.lr = {1e-3, 5e-3, 1e-3, 5e-2, 2.5e-3, 1.25e-4};
  auto backend = make_backend(cfg.backend);
  backend->set_images({&target});
  backend->set_state(st);
  backend->step(data.train[0].camera, 0, s);
  return backend->params();
}

// The backend passes the mask to the loss: the target under the mask does not move the model.
TEST(Masks, CpuBackendStepIgnoresTheTargetUnderTheMask) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  const Image rgb = target_image(data.train[0].image);
  Image8 masked(rgb.width, rgb.height, 4);
  masked.alpha = AlphaUse::mask;
  for (std::size_t i = 0; i < rgb.pixels(); ++i) {
    for (int c = 0; c < 3; ++c)
      masked.data[4 * i + c] = std::uint8_t(std::lround(rgb.data[3 * i + c] * 255.0f));
    masked.data[4 * i + 3] = i % std::size_t(rgb.width) < std::size_t(rgb.width) / 2 ? 0 : 255;
  }
  Image8 other = masked;
  for (std::size_t i = 0; i < other.pixels(); ++i)
    if (other.data[4 * i + 3] == 0)
      for (int c = 0; c < 3; ++c) other.data[4 * i + c] = std::uint8_t(255 - other.data[4 * i + c]);
  const Gaussians a = after_one_step(data, masked), b = after_one_step(data, other);
  test::expect_bit_identical(a, b);
  // Without the mask the same change does move the model (the test can fail).
  Image8 unmasked_other = other;
  unmasked_other.alpha = AlphaUse::composite;
  for (std::size_t i = 0; i < other.pixels(); ++i) unmasked_other.data[4 * i + 3] = 255;
  EXPECT_GT(test::relative_difference(after_one_step(data, unmasked_other), a, nullptr), 0.0);
}

// ---- loaders -----------------------------------------------------------------------------------

void write_text(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// A mask PNG of w x h: 0 in the left `holes` columns, 255 elsewhere.
void write_mask(const fs::path& p, int w, int h, int holes) {
  fs::create_directories(p.parent_path());
  Image m(w, h, 3, 1.0f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < holes && x < w; ++x)
      for (int c = 0; c < 3; ++c) m.at(x, y, c) = 0.0f;
  write_png(p.string(), m);
}

// Three 16x12 images a0..a2 of one PINHOLE camera; a0 is the test view (holdout 8).
fs::path colmap_scene(const std::string& name,
                      const std::string& camera = "1 PINHOLE 16 12 20 22 8 6\n") {
  const fs::path dir = test::temp_dir(name);
  std::string ims;
  for (int k = 0; k < 3; ++k) {
    const std::string n = "a" + std::to_string(k) + ".jpg";
    fs::create_directories(dir / "images");
    write_png((dir / "images" / n).string(), Image(16, 12, 3, 0.25f * float(k + 1)));
    ims += std::to_string(k + 1) + " 1 0 0 0 0 0 " + std::to_string(k + 3) + " 1 " + n + "\n\n";
  }
  write_text(dir / "sparse/0/cameras.txt", camera);
  write_text(dir / "sparse/0/images.txt", ims);
  write_text(dir / "sparse/0/points3D.txt", "");
  return dir;
}

std::size_t kept(const Image8& img) {
  return img.counted_pixels();
}

TEST(Masks, ColmapMasksFolderInBothNamings) {
  const fs::path dir = colmap_scene("masks_colmap");
  write_mask(dir / "masks/a0.jpg.png", 16, 12, 2);  // COLMAP's naming
  write_mask(dir / "masks/a1.png", 16, 12, 4);      // the image's stem
  write_mask(dir / "masks/a2.jpg.png", 16, 12, 0);
  const Dataset d = load_colmap(dir.string(), {});
  ASSERT_EQ(d.test.size(), 1u);
  ASSERT_EQ(d.train.size(), 2u);
  EXPECT_TRUE(d.test[0].image.masked());
  EXPECT_EQ(kept(d.test[0].image), std::size_t(14 * 12));
  EXPECT_EQ(kept(d.train[0].image), std::size_t(12 * 12));
  EXPECT_EQ(kept(d.train[1].image), std::size_t(16 * 12));
  // The colour is the image's, the mask only weighs it.
  EXPECT_NEAR(target_image(d.train[0].image).at(0, 0, 0), 0.5f, 1.0f / 255);  // 0.5 stored as 128

  // Downscaled with the image, then binarized: the 4 masked columns become 2.
  LoadOptions half;
  half.downscale = 2;
  EXPECT_EQ(kept(load_colmap(dir.string(), half).train[0].image), std::size_t(6 * 6));
}

// A lens camera: the mask is undistorted and cropped with its image, then binarized again.
TEST(Masks, MasksAreUndistortedWithTheirImages) {
  const fs::path dir = colmap_scene("masks_colmap_lens", "1 SIMPLE_RADIAL 16 12 20 8 6 0.1\n");
  for (const char* n : {"a0.jpg.png", "a1.jpg.png", "a2.jpg.png"})
    write_mask(dir / "masks" / n, 16, 12, 6);
  testing::internal::CaptureStderr();
  const Dataset d = load_colmap(dir.string(), {});
  testing::internal::GetCapturedStderr();
  const View& v = d.train[0];
  ASSERT_TRUE(v.image.masked());
  EXPECT_EQ(v.image.width, v.camera.width);
  EXPECT_EQ(v.image.height, v.camera.height);
  EXPECT_LT(v.camera.width, 16);  // cropped to what the lens saw
  for (std::size_t i = 0; i < v.image.pixels(); ++i) {
    const std::uint8_t m = v.image.data[4 * i + 3];
    ASSERT_TRUE(m == 0 || m == 255) << i;
  }
  EXPECT_GT(kept(v.image), 0u);
  EXPECT_LT(kept(v.image), v.image.pixels());
  EXPECT_EQ(v.image.data[3], 0);                              // the left edge stays masked
  EXPECT_EQ(v.image.data[4 * (v.image.width - 1) + 3], 255);  // the right edge kept
}

TEST(Masks, WithoutMasksNothingIsMasked) {
  const Dataset d = load_colmap(colmap_scene("masks_none").string(), {});
  for (const View& v : d.train) {
    EXPECT_FALSE(v.image.masked());
    EXPECT_EQ(v.image.channels, 3);
  }
}

TEST(BadInputMasks, ColmapMissingMaskNamesBothCandidates) {
  const fs::path dir = colmap_scene("masks_colmap_missing");
  write_mask(dir / "masks/a0.jpg.png", 16, 12, 2);
  write_mask(dir / "masks/a2.jpg.png", 16, 12, 2);
  test::expect_contains(error_of([&] { load_colmap(dir.string(), {}); }),
                        {"masks", "a1.jpg", "a1.jpg.png", "a1.png"});
}

TEST(BadInputMasks, ColmapMaskOfTheWrongSizeNamesTheMask) {
  const fs::path dir = colmap_scene("masks_colmap_size");
  write_mask(dir / "masks/a0.jpg.png", 16, 12, 2);
  write_mask(dir / "masks/a1.jpg.png", 15, 12, 2);
  write_mask(dir / "masks/a2.jpg.png", 16, 12, 2);
  test::expect_contains(error_of([&] { load_colmap(dir.string(), {}); }),
                        {"images.txt", "a1.jpg.png", "mask", "15x12", "16x12"});
}

TEST(BadInputMasks, MaskThatKeepsNothingIsRefused) {
  const fs::path dir = colmap_scene("masks_colmap_empty");
  write_mask(dir / "masks/a0.jpg.png", 16, 12, 2);
  write_mask(dir / "masks/a1.jpg.png", 16, 12, 16);
  write_mask(dir / "masks/a2.jpg.png", 16, 12, 2);
  test::expect_contains(error_of([&] { load_colmap(dir.string(), {}); }),
                        {"a1.jpg.png", "mask", "no pixel", "inverted"});
}

std::string frame(const std::string& file_path, double d, const std::string& extra = "") {
  return R"({"file_path": ")" + file_path + R"(", )" + extra +
         R"("transform_matrix": [[1,0,0,0],[0,1,0,0],[0,0,1,)" + std::to_string(d) +
         "],[0,0,0,1]]}";
}

fs::path transforms_scene(const std::string& name, const std::string& mask_b) {
  const fs::path dir = test::temp_dir(name);
  for (const char* n : {"a", "b", "c"}) {
    fs::create_directories(dir / "images");
    write_png((dir / "images" / (std::string(n) + ".png")).string(), Image(16, 12, 3, 0.5f));
  }
  write_text(dir / "transforms.json", R"({"fl_x": 20, "fl_y": 22, "cx": 8, "cy": 6, "frames": [)" +
                                          frame("images/a.png", 3) + "," +
                                          frame("images/b.png", 4, mask_b) + "," +
                                          frame("images/c.png", 5) + "]}");
  return dir;
}

TEST(Masks, TransformsMaskPathIsRelativeToTheJson) {
  const fs::path dir = transforms_scene("masks_transforms", R"("mask_path": "masks/b.png",)");
  write_mask(dir / "masks/b.png", 16, 12, 3);
  const Dataset d = load_transforms(dir.string(), {});
  ASSERT_EQ(d.train.size(), 2u);  // b, c (a is the test view)
  EXPECT_EQ(kept(d.train[0].image), std::size_t(13 * 12));
  EXPECT_FALSE(d.train[1].image.masked());  // frames without mask_path count every pixel
}

TEST(BadInputMasks, TransformsMissingMaskNamesFrameAndFile) {
  const fs::path dir = transforms_scene("masks_transforms_missing", R"("mask_path": "m/b.png",)");
  test::expect_contains(error_of([&] { load_transforms(dir.string(), {}); }),
                        {"transforms.json", "frames[1]", "m/b.png"});
}

TEST(BadInputMasks, TransformsMaskPathMustBeAString) {
  const fs::path dir = transforms_scene("masks_transforms_type", R"("mask_path": 3,)");
  test::expect_contains(error_of([&] { load_transforms(dir.string(), {}); }),
                        {"transforms.json", "frames[1].mask_path", "string"});
}

// RGBA alpha: composited on the background by default (NeRF-synthetic), a mask on request.
TEST(Masks, AlphaIsTransparencyUnlessAlphaMask) {
  const fs::path dir = transforms_scene("masks_alpha", "");
  Image rgba(16, 12, 4, 0.5f);
  for (int y = 0; y < 12; ++y)
    for (int x = 0; x < 16; ++x) rgba.at(x, y, 3) = x < 5 ? 0.0f : 1.0f;
  write_png((dir / "images/b.png").string(), rgba);
  const Dataset plain = load_transforms(dir.string(), {});
  const Image8& kept_alpha = plain.train[0].image;
  EXPECT_EQ(kept_alpha.channels, 4);  // full size, composited by the loss
  EXPECT_FALSE(kept_alpha.masked());
  EXPECT_EQ(target_image(kept_alpha).at(0, 0, 0), 1.0f);  // the white background
  LoadOptions opts;
  opts.alpha_mask = true;
  const Dataset with_mask = load_transforms(dir.string(), opts);
  const Image8& masked = with_mask.train[0].image;
  EXPECT_TRUE(masked.masked());
  EXPECT_EQ(kept(masked), std::size_t(11 * 12));
  EXPECT_NEAR(target_image(masked).at(0, 0, 0), 0.5f, 1.0f / 255);  // the colour (128), not white
}

}  // namespace
}  // namespace splat
