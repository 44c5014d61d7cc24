#include "core/camera.h"
#include "cuda/types.h"

namespace splat::cuda {

CameraParams CameraParams::from(const Camera& cam) {
  CameraParams p;
  p.width = cam.width;
  p.height = cam.height;
  p.fx = float(cam.fx);
  p.fy = float(cam.fy);
  p.cx = float(cam.cx);
  p.cy = float(cam.cy);
  const Vec3<double> c = cam.center();
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) p.R[r * 3 + k] = float(cam.R[r][k]);
    p.t[r] = float(cam.t[r]);
    p.campos[r] = float(c[r]);
  }
  return p;
}

}  // namespace splat::cuda
