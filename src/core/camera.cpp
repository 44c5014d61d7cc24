#include "core/camera.h"

namespace splat {

Vec3<double> Camera::center() const {
  const Mat3<double> Rt = transpose(R);
  const Vec3<double> c = Rt * t;
  return {-c.x, -c.y, -c.z};
}

Camera Camera::from_c2w_opengl(const std::array<double, 16>& c2w,
                               int width,
                               int height,
                               double fx,
                               double fy,
                               double cx,
                               double cy) {
  // Columns 1 and 2 (camera y and z axes in world) flip sign: OpenGL -> OpenCV.
  Mat3<double> Rc2w;
  Vec3<double> center;
  for (int r = 0; r < 3; ++r) {
    Rc2w[r][0] = c2w[r * 4 + 0];
    Rc2w[r][1] = -c2w[r * 4 + 1];
    Rc2w[r][2] = -c2w[r * 4 + 2];
    center[r] = c2w[r * 4 + 3];
  }
  Camera cam;
  cam.width = width;
  cam.height = height;
  cam.fx = fx;
  cam.fy = fy;
  cam.cx = cx;
  cam.cy = cy;
  cam.R = transpose(Rc2w);
  const Vec3<double> Rc = cam.R * center;
  cam.t = {-Rc.x, -Rc.y, -Rc.z};
  return cam;
}

Camera Camera::from_w2c(const std::array<double, 16>& w2c,
                        int width,
                        int height,
                        double fx,
                        double fy,
                        double cx,
                        double cy) {
  Camera cam;
  cam.width = width;
  cam.height = height;
  cam.fx = fx;
  cam.fy = fy;
  cam.cx = cx;
  cam.cy = cy;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) cam.R[r][c] = w2c[r * 4 + c];
    cam.t[r] = w2c[r * 4 + 3];
  }
  return cam;
}

Camera Camera::downscaled(int factor) const {
  if (factor <= 1) return *this;
  return resized(width / factor, height / factor);
}

Camera Camera::resized(int w, int h) const {
  Camera c = *this;
  c.width = w;
  c.height = h;
  const double sx = double(c.width) / width, sy = double(c.height) / height;
  c.fx *= sx;
  c.cx *= sx;
  c.fy *= sy;
  c.cy *= sy;
  return c;
}

}  // namespace splat
