#pragma once
// Helpers shared by the tests: where the real data is, and running the CLI.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gaussians.h"
#include "engine/backend.h"
#include "engine/settings.h"
#include "io/checkpoint.h"
#include "io/dataset.h"

namespace splat::test {

// The gradient and loss of one view, straight from the reference pipeline (as the CPU backend
// forms them in a step of that view).
struct ViewGrad {
  Gaussians grad;
  double loss = 0;
};
ViewGrad view_grad(const Gaussians& g, const View& v, const RasterSettings& rs, double lambda);

// ../shared beside the repository (override with SPLAT_SHARED).
inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("SPLAT_SHARED")) return env;
  return SPLAT_SHARED_DIR;
}

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// The splat binary the tests run: the build's, or SPLAT_BIN's (a copy elsewhere, e.g. on a GPU
// machine; a bad-input test is checked against an older binary this way).
inline std::string splat_binary() {
  const char* bin = std::getenv("SPLAT_BIN");
  return bin ? bin : SPLAT_BINARY;
}

// Runs a shell command line, stdout and stderr together.
RunResult run_command(const std::string& command);
// Runs the splat binary with the given argument string through the shell; killed after
// timeout_s seconds if positive (exit code 124).
RunResult run_splat(const std::string& args, int timeout_s = 0);

// A fresh, empty temporary directory for one test.
std::filesystem::path temp_dir(const std::string& name);

// The message of the splat::Error that f throws; a test failure (and "") if it throws nothing.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a splat::Error";
  return {};
}

// EXPECTs msg to contain every part.
inline void expect_contains(const std::string& msg, std::initializer_list<std::string> parts) {
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' in: " << msg;
}

// EXPECTs msg to contain text, printing both otherwise.
#define EXPECT_MENTIONS(msg, text) \
  EXPECT_NE((msg).find(text), std::string::npos) << "missing \"" << (text) << "\" in: " << (msg)

// The arguments of a short CPU training run (300 splats, 20 iterations) on `data` into `out`;
// `extra` goes last.
std::string short_train_args(const std::string& data,
                             const std::filesystem::path& out,
                             const std::string& extra = "");

// A small generated demo scene (64x64, 24 training and 4 test views), written once per process
// and seed. Another seed than the demo's 7 places the cameras elsewhere: the same image names and
// sizes, other pictures (as two NeRF-synthetic scenes are).
const std::string& small_demo_scene(std::uint64_t seed = 7);

// `frames` views of the demo scene on an orbit of `arc` radians (io/demo_scene.h's
// write_demo_orbit) as dir/frames/frame_NNNN.png, encoded with ffmpeg (H.264, 8 frames a second)
// into dir/demo.mp4, whose path it returns. A failed encode is a test failure (and "").
std::string demo_video(
    const std::filesystem::path& dir, int frames, double arc, int w, int h, int supersample);

}  // namespace splat::test

namespace splat {
template <class T>
struct GaussiansT;
struct Config;
struct Checkpoint;
struct Dataset;
namespace test {
// The config of a short CPU training in a test: `iterations` steps with 3DGS's initial splats
// (nearest-neighbour size, opacity 0.1), which cover the images from the first step, so that a
// few hundred steps show whether the cameras see the scene (MCMC's smaller ones, the default,
// need more steps than a test has); no progress lines.
Config short_cpu_training(std::int64_t iterations);
// Trains cfg on data from its initial model; the mean PSNR on data's test views.
double held_out_psnr(const Config& cfg, const Dataset& data);
// Trains cfg on data from its initial model: the backend's state at the end, and every loss.
struct TrainedRun {
  TrainState state;
  std::vector<double> losses;
};
TrainedRun trained_run(const Config& cfg, const Dataset& data);
// A per-image feature (train.appearance, train.pose_opt) across resumes: `off` (without it) trains
// from its initial model and checkpoints; `on` (with it, more iterations) resumes from that
// checkpoint and trains; `off` with two more iterations than `on` then resumes from on's
// checkpoint. The state right after on's resume, both checkpoints, and the last resume's error.
struct AcrossSetting {
  TrainState resumed;
  Checkpoint without, with;
  std::string error;
};
AcrossSetting resume_across_setting(const Config& off, const Config& on, const Dataset& data);
// EXPECTs every group of a and b to be equal bit for bit (and the SH degree).
void expect_bit_identical(const GaussiansT<float>& a, const GaussiansT<float>& b);
// ||a - b|| / ||b - init|| over every parameter (init null: ||a - b|| / ||b||): the difference
// between two runs against how far training moved.
double relative_difference(const GaussiansT<float>& a,
                           const GaussiansT<float>& b,
                           const GaussiansT<float>* init);
// Trains cfg (whose output.checkpoint_every is `at`) from scratch, resumes a second run from its
// checkpoint at step `at`, and EXPECTs the two to end bit-identical: parameters, Adam state and
// the losses after `at`. Returns the checkpoint it resumed from.
Checkpoint expect_resume_exact(const Config& cfg, const Dataset& data, std::int64_t at);
// A model whose every value lies inside the range each compact format (.splat, .spz,
// .compressed.ply) can hold, so that the round trips measure quantization only: positions in
// [-2, 2], log scales in [-6, 0], colors in [0, 1], higher SH in [-0.5, 0.5] (spz's [-1, 1],
// compressed ply's [-4, 4]).
GaussiansT<float> model_in_range(int degree, std::size_t n, unsigned seed);
// The bytes of the file at p.
std::vector<std::uint8_t> file_bytes(const std::filesystem::path& p);
}  // namespace test
}  // namespace splat

namespace splat::test {}  // namespace splat::test

// Skip (with a message) when ../shared/data/<what> is absent.
#define SPLAT_REQUIRE_SHARED(rel)                                                      \
  do {                                                                                 \
    if (!std::filesystem::exists(::splat::test::shared_dir() / (rel)))                 \
      GTEST_SKIP() << "skipped: " << (::splat::test::shared_dir() / (rel)).string()    \
                   << " is absent (the real data lives in ../shared beside the repo)"; \
  } while (0)
