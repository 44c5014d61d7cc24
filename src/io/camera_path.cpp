#include "io/camera_path.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace splat {

namespace {

using V = Vec3<double>;

V axis(const Camera& c, int i) {
  return {c.R[i][0], c.R[i][1], c.R[i][2]};
}  // camera axis i in world

// Unit quaternion (w, x, y, z) of a rotation matrix, and back (Shepperd's method).
std::array<double, 4> to_quat(const Mat3<double>& m) {
  const double tr = m[0][0] + m[1][1] + m[2][2];
  std::array<double, 4> q;
  if (tr > 0) {
    const double s = 2 * std::sqrt(1 + tr);
    q = {s / 4, (m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s};
  } else if (m[0][0] > m[1][1] && m[0][0] > m[2][2]) {
    const double s = 2 * std::sqrt(1 + m[0][0] - m[1][1] - m[2][2]);
    q = {(m[2][1] - m[1][2]) / s, s / 4, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s};
  } else if (m[1][1] > m[2][2]) {
    const double s = 2 * std::sqrt(1 + m[1][1] - m[0][0] - m[2][2]);
    q = {(m[0][2] - m[2][0]) / s, (m[0][1] + m[1][0]) / s, s / 4, (m[1][2] + m[2][1]) / s};
  } else {
    const double s = 2 * std::sqrt(1 + m[2][2] - m[0][0] - m[1][1]);
    q = {(m[1][0] - m[0][1]) / s, (m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, s / 4};
  }
  return q;
}

Mat3<double> from_quat(const std::array<double, 4>& q) {
  const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  const double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
  Mat3<double> r;
  r[0] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)};
  r[1] = {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)};
  r[2] = {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)};
  return r;
}

std::array<double, 4> slerp(std::array<double, 4> a, std::array<double, 4> b, double t) {
  double d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
  if (d < 0) {  // the shorter way round
    for (double& v : b) v = -v;
    d = -d;
  }
  std::array<double, 4> q;
  if (d > 0.9995) {  // nearly parallel: linear is exact enough and stable
    for (int k = 0; k < 4; ++k) q[k] = a[k] + t * (b[k] - a[k]);
    return q;
  }
  const double theta = std::acos(d), s = std::sin(theta);
  const double wa = std::sin((1 - t) * theta) / s, wb = std::sin(t * theta) / s;
  for (int k = 0; k < 4; ++k) q[k] = wa * a[k] + wb * b[k];
  return q;
}

Camera with_pose(const Camera& intrinsics, const Mat3<double>& R, V eye) {
  Camera c = intrinsics;
  c.R = R;
  c.t = -1.0 * (R * eye);
  return c;
}

}  // namespace

CameraPath parse_camera_path(const std::string& name) {
  if (name == "orbit") return CameraPath::Orbit;
  if (name == "spiral") return CameraPath::Spiral;
  if (name == "views") return CameraPath::Views;
  throw Error("--path " + name + ": unknown camera path (orbit, spiral or views)");
}

Camera look_at(const Camera& intrinsics, V eye, V target, V up) {
  const V z = normalize(target - eye);
  const V x = normalize(cross(-1.0 * up, z));
  const V y = cross(z, x);
  Mat3<double> R;
  R[0] = {x.x, x.y, x.z};
  R[1] = {y.x, y.y, y.z};
  R[2] = {z.x, z.y, z.z};
  return with_pose(intrinsics, R, eye);
}

std::vector<Camera> camera_path(const Dataset& data, CameraPath path, int frames) {
  if (data.train.empty()) throw Error("camera path: the dataset has no training cameras");
  if (frames < 1) throw Error("--frames " + std::to_string(frames) + ": must be at least 1");
  const std::vector<View>& views = data.train;
  const Camera& first = views.front().camera;
  std::vector<Camera> out;
  if (path == CameraPath::Views) {
    // Frame k sits at parameter s along the polyline through the cameras, s in [0, n - 1].
    const int n = int(views.size());
    for (int k = 0; k < frames; ++k) {
      const double s = frames == 1 ? 0.0 : double(k) * (n - 1) / (frames - 1);
      const int i = std::min(int(s), std::max(n - 2, 0));
      const double t = std::min(1.0, s - i);
      const Camera& a = views[i].camera;
      const Camera& b = views[std::min(i + 1, n - 1)].camera;
      const V eye = a.center() + t * (b.center() - a.center());
      out.push_back(with_pose(first, from_quat(slerp(to_quat(a.R), to_quat(b.R), t)), eye));
    }
    return out;
  }
  // The up the cameras share (their mean -y axis), the point they look at, and their heights
  // above it and distances from the up axis through it.
  V up{};
  for (const View& v : views) up = up - axis(v.camera, 1);
  up = normalize(up);
  const V centre = scene_bounds(data).center;
  double lo = 1e300, hi = -1e300, radius = 0;
  for (const View& v : views) {
    const V d = v.camera.center() - centre;
    const double h = dot(d, up);
    lo = std::min(lo, h);
    hi = std::max(hi, h);
    radius += norm(d - h * up) / double(views.size());
  }
  const double mean_height = 0.5 * (lo + hi);
  V e1 = first.center() - centre;
  e1 = e1 - dot(e1, up) * up;
  e1 = norm(e1) > 1e-9 ? normalize(e1) : normalize(cross(up, axis(first, 0)));
  const V e2 = cross(up, e1);
  for (int k = 0; k < frames; ++k) {
    const double f = double(k) / frames;  // a closed loop: frame `frames` would be frame 0
    double angle = 2 * std::numbers::pi * f, height = mean_height;
    if (path == CameraPath::Spiral) {
      angle *= 2;
      height = lo + (hi - lo) * 0.5 * (1 - std::cos(2 * std::numbers::pi * f));
    }
    const V eye = centre + height * up + radius * (std::cos(angle) * e1 + std::sin(angle) * e2);
    out.push_back(look_at(first, eye, centre, up));
  }
  return out;
}

}  // namespace splat
