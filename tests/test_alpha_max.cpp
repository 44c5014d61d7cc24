// RasterSettings::alpha_max: the alpha clamp of the renders (splat eval --alpha-max), splat's
// 0.99 by default. An opaque black splat in front of a white background lets 1 - alpha_max of the
// background through at its centre.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backend.h"
#include "engine/backend_config.h"
#include "train/backend_factory.h"

namespace splat {
namespace {

TEST(AlphaMax, ClampsTheCentreOfAnOpaqueSplat) {
  Gaussians g;
  g.sh_degree = 0;
  g.resize(1);
  g.means = {0, 0, 4};  // on the optical axis, 4 in front of the camera
  g.log_scales = {std::log(2.5f), std::log(2.5f), std::log(2.5f)};  // about 40 px
  g.quats = {1, 0, 0, 0};
  g.raw_opacity = {12.0f};                                                 // opacity 1 - 6e-6
  g.sh = {-0.5f / 0.28209479f, -0.5f / 0.28209479f, -0.5f / 0.28209479f};  // black
  TrainState s;
  s.params = g;
  s.adam_m = s.adam_v = g;
  BackendConfig bc;
  bc.type = BackendKind::Cpu;
  auto backend = make_backend(bc);
  backend->set_state(s);
  Camera cam;
  cam.width = cam.height = 64;
  cam.fx = cam.fy = 64;
  cam.cx = cam.cy = 32;
  RasterSettings rs;
  rs.sh_degree = 0;
  rs.background = {1, 1, 1};
  EXPECT_EQ(rs.alpha_max, 0.99f) << "splat's convention by default";
  for (const float amax : {0.99f, 0.999f}) {
    rs.alpha_max = amax;
    const Image img = backend->render(cam, rs);
    const std::size_t centre = (std::size_t(32) * 64 + 32) * 3;
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(img.data[centre + c], 1.0f - amax, 2e-5f) << amax;
  }
}

}  // namespace
}  // namespace splat
