// backend.timing's workload counts (cuda/render_work.h; the report's work.*, which
// tools/bench/roofline.py reads) on scenes whose counts are known exactly: n splats stacked on the
// optical axis, so wide that every pixel sees each at nearly its full opacity. Every tile's list
// then holds all n, and the opacity decides how far each pixel blends.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/camera.h"
#include "core/image.h"
#include "engine/backend.h"
#include "train/backend_factory.h"

namespace splat {
namespace {

constexpr int kWidth = 48, kHeight = 40;  // 8 px tiles (a small image): 6 x 5, all whole
constexpr double kPixels = kWidth * kHeight, kTiles = 30;

// One timed step of n splats of this opacity at depth 5, 50 units wide (500 px on screen: the
// Gaussian falls by under 0.2% across the image), against a black target.
std::map<std::string, double> one_step(int n, float opacity, bool sparse_sh_adam) {
  BackendConfig bc;
  bc.type = BackendKind::Cuda;
  bc.timing = true;
  auto backend = make_backend(bc);
  const Image8 target(kWidth, kHeight, 3);
  backend->set_images({&target});
  TrainState st;
  st.params.sh_degree = 0;
  st.params.resize(std::size_t(n));
  for (int i = 0; i < n; ++i) {
    st.params.means[i * 3 + 2] = 5.0f;
    for (int k = 0; k < 3; ++k) st.params.log_scales[i * 3 + k] = std::log(50.0f);
    st.params.quats[i * 4] = 1.0f;
    st.params.raw_opacity[i] = std::log(opacity / (1.0f - opacity));
    for (int c = 0; c < 3; ++c) st.params.sh[i * 3 + c] = 1.0f;  // grey 0.78: a loss gradient
  }
  st.adam_m = st.adam_v = st.params;
  for (Gaussians* g : {&st.adam_m, &st.adam_v})
    g->for_each_group([](const char*, std::vector<float>& v) { v.assign(v.size(), 0.0f); });
  backend->set_state(st);

  Camera cam;  // at the origin, looking down +z
  cam.width = kWidth;
  cam.height = kHeight;
  cam.fx = cam.fy = 50;
  cam.cx = kWidth / 2.0;
  cam.cy = kHeight / 2.0;
  StepSettings s;
  s.raster.sh_degree = 0;
  s.sparse_sh_adam = sparse_sh_adam;
  backend->step(cam, 0, s);
  std::vector<StepResult> losses;
  backend->collect_losses(losses, true);
  std::map<std::string, double> report;
  for (const auto& [key, value] : backend->report()) report[key] = value;
  EXPECT_EQ(report["engine.steps_retired"], 1.0);
  EXPECT_EQ(report["work.views"], 1.0);
  EXPECT_EQ(report["work.splats"], double(n));
  EXPECT_EQ(report["work.visible"], double(n));
  EXPECT_EQ(report["work.pixels"], kPixels);
  EXPECT_EQ(report["work.tiles"], kTiles);
  EXPECT_EQ(report["isect.mean_per_step"], n * kTiles);
  EXPECT_EQ(report["work.list_visits"], n * kPixels);
  EXPECT_EQ(report["work.target_bytes"], 3 * kPixels);
  EXPECT_EQ(report["sync.work_count"], 1.0) << "one wait for the counts, per view";
  return report;
}

// Opacity 0.5: every pixel blends all three (T = 1/8 at the end).
TEST(RenderWorkGpu, EveryPixelBlendsEverySplat) {
  auto r = one_step(3, 0.5f, true);
  EXPECT_EQ(r["work.blend_visits"], 3 * kPixels);
  EXPECT_EQ(r["work.boundary_reads"], 0.0) << "3 entries: one segment";
  EXPECT_EQ(r["work.sh_adam_splats"], 3.0) << "every splat got a color gradient";
}

// Alpha clamped at 0.99: after the first splat T = 0.01, and the second would take it to 1e-4,
// where a pixel stops. So each pixel blends one of the three, and the other two get no color
// gradient: sparse SH Adam leaves them alone.
TEST(RenderWorkGpu, EarlyTerminationCountsUpToTheLastBlendedEntry) {
  auto r = one_step(3, 0.999f, true);
  EXPECT_EQ(r["work.blend_visits"], kPixels);
  EXPECT_EQ(r["work.sh_adam_splats"], 1.0);
}

// 100 entries of opacity 0.02 (T = 0.98^100 = 0.13 at the end): the backward's segments are 64
// entries long, so every pixel blends past the one boundary and the backward reads its record.
// Dense SH Adam updates every splat.
TEST(RenderWorkGpu, LongListsReadOneBoundaryRecordPerPixel) {
  auto r = one_step(100, 0.02f, false);
  EXPECT_EQ(r["work.blend_visits"], 100 * kPixels);
  EXPECT_EQ(r["work.boundary_reads"], kPixels);
  EXPECT_EQ(r["work.sh_adam_splats"], 100.0);
}

}  // namespace
}  // namespace splat
