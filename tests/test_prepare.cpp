// splat prepare: frame selection, the [prepare] config keys, and the bad inputs refused before
// any structure from motion runs (the SfM runs are in test_prepare_sfm.cpp, the slow tier).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bad_input_util.h"
#include "core/image.h"
#include "io/demo_scene.h"
#include "io/image_io.h"
#include "io/process.h"
#include "io/run_dir.h"
#include "io/video_frames.h"
#include "test_util.h"
#include "train/config.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

bool have_program(const std::string& name) {
  try {
    find_program(name, name);
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(Prepare, SharpestPerWindowKeepsTheBestOfEachWindow) {
  // 10 frames into 3 windows [0, 3), [3, 6), [6, 10).
  const std::vector<double> s = {1, 5, 2, 9, 9, 1, 0, 3, 8, 2};
  EXPECT_EQ(sharpest_per_window(s, 3), (std::vector<int>{1, 3, 8}));  // ties: the first
  EXPECT_EQ(sharpest_per_window(s, 10).size(), 10u);
  EXPECT_EQ(sharpest_per_window(s, 50).size(), 10u);  // never more than the video has
}

TEST(Prepare, LaplacianVarianceFallsWithBlur) {
  const int w = 32, h = 32;
  std::vector<std::uint8_t> sharp(w * h), blurred(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) sharp[y * w + x] = ((x / 4 + y / 4) % 2) ? 200 : 40;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      int sum = 0, n = 0;
      for (int dy = -2; dy <= 2; ++dy)
        for (int dx = -2; dx <= 2; ++dx)
          if (x + dx >= 0 && x + dx < w && y + dy >= 0 && y + dy < h)
            sum += sharp[(y + dy) * w + x + dx], ++n;
      blurred[y * w + x] = std::uint8_t(sum / n);
    }
  EXPECT_GT(laplacian_variance(sharp, w, h), 4 * laplacian_variance(blurred, w, h));
}

TEST(Prepare, ConfigKeysReadAndCheck) {
  Config cfg;
  apply_override(cfg, "prepare.matcher=sequential");
  apply_override(cfg, "prepare.camera_model=SIMPLE_RADIAL");
  apply_override(cfg, "prepare.max_image_size=800");
  EXPECT_EQ(cfg.prepare.matcher, PrepareMatcher::Sequential);
  EXPECT_EQ(cfg.prepare.camera, PrepareCamera::SimpleRadial);
  EXPECT_EQ(cfg.prepare.max_image_size, 800);
  test::expect_contains(test::error_of([&] { apply_override(cfg, "prepare.camera_model=FOV"); }),
                        {"prepare.camera_model", "OPENCV"});
  test::expect_contains(test::error_of([&] { apply_override(cfg, "prepare.frames=1"); }),
                        {"prepare.frames", "[3, 100000]"});
  EXPECT_NE(cfg.to_toml().find("[prepare]\nmax_image_size = 800"), std::string::npos);
}

// A landscape clip whose metadata says "shown turned by 90 degrees" (as a phone held upright
// records it) comes out as portrait frames, the sharpest of each window.
TEST(Prepare, VideoFramesAreTurnedAsTheMetadataSays) {
  if (!have_program("ffmpeg")) GTEST_SKIP() << "ffmpeg is not installed (scripts/deps.sh)";
  const fs::path dir = test::temp_dir("prepare_rotation");
  const std::string plain = test::demo_video(dir, 12, 0.6, 64, 48, 1);
  ASSERT_FALSE(plain.empty());
  // ffmpeg 5.1 writes the rotation (a display matrix) when it copies the stream, not when it
  // encodes.
  const std::string clip = (dir / "clip.mp4").string();
  const test::RunResult remux = test::run_command("ffmpeg -nostdin -loglevel error -i " + plain +
                                                  " -c copy -metadata:s:v:0 rotate=90 " + clip);
  ASSERT_EQ(remux.exit_code, 0) << remux.output;
  fs::create_directories(dir / "out");
  const VideoFrames v = extract_video_frames(find_program("ffmpeg", "ffmpeg"), clip,
                                             (dir / "out").string(), 4, (dir / "log").string());
  EXPECT_EQ(v.decoded, 12);
  ASSERT_EQ(v.files.size(), 4u);
  const Image first = read_image((dir / "out" / v.files[0]).string());
  EXPECT_EQ(first.width, 48);
  EXPECT_EQ(first.height, 64);
}

// ---- Bad inputs, refused before COLMAP runs ----------------------------------------------------

std::string prepare_cmd(const fs::path& in, const fs::path& out) {
  return "prepare " + in.string() + " --out " + out.string();
}

TEST(BadInputPrepare, TooFewImages) {
  const fs::path dir = test::temp_dir("prepare_few");
  test::write_rgb_png(dir / "photos" / "a.png", 32, 24);
  test::write_rgb_png(dir / "photos" / "b.png", 32, 24);
  const test::RunResult r = test::run_splat(prepare_cmd(dir / "photos", dir / "ds"));
  EXPECT_NE(r.exit_code, 0);
  test::expect_error(r.output, {(dir / "photos").string(), "2 images", "at least 3"});
  EXPECT_FALSE(fs::exists(dir / "ds"));  // nothing written
}

TEST(BadInputPrepare, UnreadableImagesAreNamed) {
  const fs::path dir = test::temp_dir("prepare_unreadable");
  for (const char* n : {"a.png", "b.png", "c.png", "d.png"})
    test::write_rgb_png(dir / "photos" / n, 32, 24);
  test::write_text(dir / "photos" / "e.jpg", "not a JPEG at all");
  const test::RunResult r = test::run_splat(prepare_cmd(dir / "photos", dir / "ds"));
  EXPECT_NE(r.exit_code, 0);
  test::expect_error(r.output,
                     {"1 of 5 images cannot be decoded", (dir / "photos" / "e.jpg").string()});
  EXPECT_FALSE(fs::exists(dir / "ds"));
}

TEST(BadInputPrepare, UndecodableVideo) {
  if (!have_program("ffmpeg")) GTEST_SKIP() << "ffmpeg is not installed (scripts/deps.sh)";
  const fs::path dir = test::temp_dir("prepare_video");
  test::write_text(dir / "clip.mp4", std::string(4096, 'x'));
  const test::RunResult r = test::run_splat(prepare_cmd(dir / "clip.mp4", dir / "ds"));
  EXPECT_NE(r.exit_code, 0);
  test::expect_error(r.output, {(dir / "clip.mp4").string(), "ffmpeg cannot decode it"});
  EXPECT_EQ(test::file_bytes(dir / "clip.mp4").size(), 4096u);
}

TEST(BadInputPrepare, OutputHoldingADatasetIsRefused) {
  const fs::path dir = test::temp_dir("prepare_out");
  for (const char* n : {"a.png", "b.png", "c.png"}) test::write_rgb_png(dir / "photos" / n, 32, 24);
  test::write_colmap_scene(dir / "ds", test::small_colmap_model(), test::ColmapForm::Binary);
  const auto before = test::file_bytes(dir / "ds" / "sparse" / "0" / "images.bin");
  const test::RunResult r = test::run_splat(prepare_cmd(dir / "photos", dir / "ds"));
  EXPECT_NE(r.exit_code, 0);
  test::expect_error(r.output, {"--out " + (dir / "ds").string(),
                                "already holds a dataset that splat did not write"});
  EXPECT_EQ(test::file_bytes(dir / "ds" / "sparse" / "0" / "images.bin"), before);
}

// A dataset splat prepared before is replaced only with --overwrite, and the user's files beside
// it are kept even then (the overwriting run fails later here: SfM finds nothing in gradients).
TEST(BadInputPrepare, OwnDatasetIsReplacedOnlyWithOverwrite) {
  const fs::path dir = test::temp_dir("prepare_own");
  for (const char* n : {"a.png", "b.png", "c.png"}) test::write_rgb_png(dir / "photos" / n, 32, 24);
  {
    RunDir earlier((dir / "ds").string(), "--out", "prepare");
    test::write_text(earlier.claim("sparse/0/images.bin"), "earlier");
  }
  test::write_text(dir / "ds" / "notes.txt", "the user's");
  const std::string cmd = prepare_cmd(dir / "photos", dir / "ds") + " --set prepare.threads=1";
  const test::RunResult r = test::run_splat(cmd);
  EXPECT_NE(r.exit_code, 0);
  test::expect_error(r.output, {"--out " + (dir / "ds").string(),
                                "already holds a dataset splat prepared", "--overwrite"});
  EXPECT_TRUE(fs::exists(dir / "ds" / "sparse" / "0" / "images.bin"));
  test::run_splat(cmd + " --overwrite");
  EXPECT_FALSE(fs::exists(dir / "ds" / "sparse" / "0" / "images.bin"));
  EXPECT_TRUE(fs::exists(dir / "ds" / "notes.txt"));
}

TEST(BadInputPrepare, MissingColmapNamesThePackage) {
  const fs::path dir = test::temp_dir("prepare_nocolmap");
  for (const char* n : {"a.png", "b.png", "c.png"}) test::write_rgb_png(dir / "photos" / n, 32, 24);
  const test::RunResult r =
      test::run_command("PATH=" + (dir / "empty").string() + " " + test::splat_binary() + " " +
                        prepare_cmd(dir / "photos", dir / "ds"));
  EXPECT_NE(r.exit_code, 0);
  test::expect_error(r.output, {"colmap: not found", "Debian package colmap"});
}

}  // namespace
}  // namespace splat
