// Backend::render on the GPU is a function of the model and the camera alone: the renders before
// it (other cameras, other image sizes, which leave the renderer's buffers holding their lists)
// do not change a pixel, and a camera rebuilt field by field renders as the original.
#include <gtest/gtest.h>

#include <vector>

#include "core/camera.h"
#include "core/image.h"
#include "engine/backend.h"
#include "parity_util.h"
#include "train/backend_factory.h"

namespace splat {
namespace {

using namespace test;

// parity_util's bit_equal, with the image's size.
bool same_bits(const Image& a, const Image& b) {
  return a.width == b.width && a.height == b.height && bit_equal(a.data, b.data);
}

TEST(CudaRender, DependsOnlyOnTheModelAndTheCamera) {
  const Scene scene = random_scene(4000, 160, 120, 2024u);
  TrainState st;
  st.params = scene.gaussians;
  st.adam_m = st.adam_v = st.params;
  BackendConfig bc;
  bc.type = BackendKind::Cuda;
  auto backend = make_backend(bc);
  backend->set_state(st);
  RasterSettings rs;
  rs.sh_degree = scene.gaussians.sh_degree;

  const Camera& a = scene.camera;
  Camera other = a;  // moved and wider: other tiles, other lists, a larger image
  other.t[0] += 0.4;
  other.t[2] += 0.7;
  other.width = 224;
  other.height = 96;
  other.cx = 112;
  other.cy = 48;
  Camera rebuilt;
  rebuilt.width = a.width, rebuilt.height = a.height;
  rebuilt.fx = a.fx, rebuilt.fy = a.fy, rebuilt.cx = a.cx, rebuilt.cy = a.cy;
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) rebuilt.R[r][k] = a.R[r][k];
    rebuilt.t[r] = a.t[r];
  }

  const Image first = backend->render(a, rs);
  const Image again = backend->render(a, rs);
  const Image moved = backend->render(other, rs);
  const Image after_other = backend->render(a, rs);
  const Image from_fields = backend->render(rebuilt, rs);
  EXPECT_FALSE(same_bits(moved, first));  // the other camera sees another image
  EXPECT_TRUE(same_bits(again, first)) << "the same camera twice";
  EXPECT_TRUE(same_bits(after_other, first)) << "after a render of another camera";
  EXPECT_TRUE(same_bits(from_fields, first)) << "the camera rebuilt from its fields";
  // A fresh backend with the same model: the first render of a renderer equals a later one.
  auto fresh = make_backend(bc);
  fresh->set_state(st);
  fresh->render(other, rs);
  EXPECT_TRUE(same_bits(fresh->render(a, rs), first)) << "a second backend";
}

}  // namespace
}  // namespace splat
