// splat prepare end to end through COLMAP and ffmpeg: the slow tier (CMakeLists.txt's
// SPLAT_SLOW_TESTS and SPLAT_SLOW_BAD_INPUT_TESTS). Small images and two COLMAP threads keep each
// case within a minute or two on two CPU cores.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "bad_input_util.h"
#include "core/image.h"
#include "io/colmap.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "io/process.h"
#include "test_util.h"
#include "train/config.h"

namespace splat {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_PROGRAM(name)                                                    \
  do {                                                                           \
    try {                                                                        \
      find_program(name, name);                                                  \
    } catch (const Error&) {                                                     \
      GTEST_SKIP() << name << " is not installed (scripts/deps.sh installs it)"; \
    }                                                                            \
  } while (0)

// COLMAP on few threads and small images: the CI machine has two cores.
const std::string kSmallSfm = " --set prepare.threads=2 --set prepare.max_image_size=400";

// The demo frames (320x240) shrunk to 240x180 for SfM.
const std::string kDemoSfm = " --set prepare.threads=2 --set prepare.max_image_size=240";

// n of fox's photos, evenly spaced over the capture (sorted by name), copied into dir.
std::vector<std::string> copy_fox_photos(const fs::path& dir, int n) {
  const fs::path src = test::shared_dir() / "data" / "fox" / "images";
  std::vector<fs::path> all;
  for (const auto& e : fs::directory_iterator(src)) all.push_back(e.path());
  std::sort(all.begin(), all.end());
  fs::create_directories(dir);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    const fs::path& p = all[std::size_t(i) * (all.size() - 1) / (n - 1)];
    fs::copy_file(p, dir / p.filename());
    names.push_back(p.filename().string());
  }
  return names;
}

// fox's own transforms.json, keeping the frames of `names` only, beside links to their images.
void write_posed_fox(const fs::path& dir, const std::set<std::string>& names) {
  const fs::path fox = test::shared_dir() / "data" / "fox";
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(fox / "transforms.json"));
  nlohmann::json frames = nlohmann::json::array();
  fs::create_directories(dir / "images");
  for (const auto& f : doc["frames"]) {
    const fs::path image = f["file_path"].get<std::string>();
    if (!names.count(image.filename().string())) continue;
    frames.push_back(f);
    fs::create_symlink(fox / image, dir / image);
  }
  doc["frames"] = frames;
  std::ofstream(dir / "transforms.json") << doc.dump();
}

// PSNR on the test views after a short CPU training with the settings both datasets share.
double short_training_psnr(const Dataset& data) {
  Config cfg = test::short_cpu_training(300);
  cfg.model.init_points = 5000;  // random init (fox's own poses come without points)
  return test::held_out_psnr(cfg, data);
}

// 25 of fox's phone photos without their poses: COLMAP registers at least 90% of them, and a
// short training on its poses reaches within 1 dB of the same training on fox's own poses, on
// the same held-out photos (the SfM frame is arbitrary, so each dataset is evaluated through its
// own poses of those photos, which SfM saw and training did not). Measured here (2 shared cores):
// 25 of 25 registered, held-out PSNR 18.3 to 18.5 dB on COLMAP's poses (which start from its
// points) and 16.32 dB on fox's own (random start); SfM about 55 s, the whole test 160 to 250 s
// (120 to 220 s of CPU, the machine shared).
TEST(PrepareSfmSlow, FoxPhotosRegisterAndTrainLikeTheirOwnPoses) {
  SPLAT_REQUIRE_SHARED("data/fox");
  REQUIRE_PROGRAM("colmap");
  const fs::path dir = test::temp_dir("prepare_fox");
  const std::vector<std::string> names = copy_fox_photos(dir / "photos", 25);
  const test::RunResult r = test::run_splat("prepare " + (dir / "photos").string() + " --out " +
                                            (dir / "ds").string() + kSmallSfm);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_MENTIONS(r.output, "images registered");
  EXPECT_TRUE(fs::exists(dir / "ds" / "prepare.log"));
  const ColmapModel m = read_colmap_model((dir / "ds" / "sparse" / "0").string());
  EXPECT_GE(m.images.size(), 23u) << r.output;  // 90% of 25
  ASSERT_EQ(m.cameras.size(), 1u);              // one phone: one shared camera
  EXPECT_EQ(m.cameras[0].width, 1080u);         // intrinsics of the full-size photos
  EXPECT_EQ(m.cameras[0].height, 1920u);

  std::set<std::string> registered;
  for (const ColmapImage& im : m.images) registered.insert(im.name);
  write_posed_fox(dir / "posed", registered);
  LoadOptions opts;
  opts.downscale = 8;
  const Dataset sfm = load_colmap((dir / "ds").string(), opts);
  const Dataset posed = load_transforms((dir / "posed").string(), opts);
  ASSERT_EQ(sfm.test.size(), posed.test.size());
  for (std::size_t i = 0; i < sfm.test.size(); ++i) EXPECT_EQ(sfm.test[i].name, posed.test[i].name);
  const double psnr_sfm = short_training_psnr(sfm), psnr_posed = short_training_psnr(posed);
  std::printf("held-out PSNR: COLMAP's poses %.2f dB, fox's own %.2f dB (%zu of 25 registered)\n",
              psnr_sfm, psnr_posed, m.images.size());
  EXPECT_GT(psnr_sfm, psnr_posed - 1.0)
      << "COLMAP's poses " << psnr_sfm << " dB, fox's own " << psnr_posed << " dB";
}

// A video of the demo scene (ffmpeg-encoded frames of a 90-degree orbit) through splat prepare,
// with the user's file in the output folder kept and a second run into it refused; every other
// frame as a folder of photos through splat train, which prepares them first and trains 30
// steps. Measured here: 27 to 33 s (about 21 s of CPU), each SfM about 12 s of CPU.
TEST(PrepareSfmSlow, DemoVideoAndPhotosEndToEnd) {
  REQUIRE_PROGRAM("colmap");
  REQUIRE_PROGRAM("ffmpeg");
  const fs::path dir = test::temp_dir("prepare_demo_video");
  // 24 frames 4 degrees apart; the video keeps 12, the sharpest of each pair.
  const std::string video = test::demo_video(dir, 24, 1.6, 320, 240, 2);
  ASSERT_FALSE(video.empty());
  fs::create_directories(dir / "ds");
  test::write_text(dir / "ds" / "notes.txt", "the user's");
  const std::string prepare = "prepare " + video + " --out " + (dir / "ds").string() +
                              " --set prepare.frames=12" + kDemoSfm;
  const test::RunResult r = test::run_splat(prepare);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* stage : {"frames:", "extract:", "match:", "map:", "write:", "time: frames"})
    EXPECT_MENTIONS(r.output, stage);
  EXPECT_MENTIONS(r.output, "sequential");
  const ColmapModel m = read_colmap_model((dir / "ds" / "sparse" / "0").string());
  EXPECT_GE(m.images.size(), 10u) << r.output;
  EXPECT_EQ(m.cameras.size(), 1u);

  EXPECT_TRUE(fs::exists(dir / "ds" / "notes.txt"));
  const test::RunResult again = test::run_splat(prepare);  // (--overwrite: test_prepare.cpp)
  EXPECT_NE(again.exit_code, 0);
  EXPECT_MENTIONS(again.output, "already holds a dataset splat prepared");

  // splat train on the frames as photos: prepared into the run's folder, then trained. The
  // renders have no lens, and OPENCV's four distortion terms, fitted to a few hundred points,
  // can fold the image: SIMPLE_RADIAL has one.
  fs::create_directories(dir / "photos");
  for (int i = 0; i < 24; i += 2) {
    const std::string name =
        "frame_" + std::string(i < 10 ? "000" : "00") + std::to_string(i) + ".png";
    fs::copy_file(dir / "frames" / name, dir / "photos" / name);
  }
  const test::RunResult t = test::run_splat(
      "train " + (dir / "photos").string() + " --out " + (dir / "run").string() + kDemoSfm +
      " --set prepare.camera_model=SIMPLE_RADIAL" +
      " --set train.iterations=30 --set model.init_points=2000 --set backend.type=cpu");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_MENTIONS(t.output, "has no camera poses");
  EXPECT_TRUE(fs::exists(dir / "run" / "dataset" / "sparse" / "0" / "images.bin"));
  EXPECT_TRUE(fs::exists(dir / "run" / "model.ply"));
  // Resumed, the run trains on the dataset prepared before: no second SfM.
  const test::RunResult resumed = test::run_splat(
      "train " + (dir / "photos").string() + " --out " + (dir / "run").string() + " --resume " +
      (dir / "run" / "checkpoint.ckpt").string() + " --set train.iterations=40");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_MENTIONS(resumed.output, "resuming on the dataset prepared from it");
  EXPECT_EQ(resumed.output.find("extract:"), std::string::npos);
}

// Three overlapping photos and four of noise: under half registered, and the error names the
// images left out. About 2.5 s here.
TEST(BadInputPrepareSfmSlow, UnderHalfRegisteredNamesTheImages) {
  SPLAT_REQUIRE_SHARED("data/fox");
  REQUIRE_PROGRAM("colmap");
  const fs::path dir = test::temp_dir("prepare_under_half");
  const fs::path fox = test::shared_dir() / "data" / "fox" / "images";
  fs::create_directories(dir / "photos");
  for (const char* n : {"0001.jpg", "0002.jpg", "0003.jpg"})
    fs::copy_file(fox / n, dir / "photos" / n);
  std::mt19937 rng(3);
  for (int k = 0; k < 4; ++k) {
    Image noise(200, 150, 3);
    for (float& v : noise.data) v = float(rng() % 256) / 255.0f;
    write_png((dir / "photos" / ("noise" + std::to_string(k) + ".png")).string(), noise);
  }
  const test::RunResult r = test::run_splat("prepare " + (dir / "photos").string() + " --out " +
                                            (dir / "ds").string() + kSmallSfm);
  EXPECT_NE(r.exit_code, 0);
  test::expect_error(r.output,
                     {"under half", "of 7 images", "noise0.png", "noise3.png", "prepare.log"});
}

}  // namespace
}  // namespace splat
