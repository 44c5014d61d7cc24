#include "io/undistort.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>

#include "core/error.h"

namespace splat {
namespace {

// theta (1 + k1 theta^2 + ... + k4 theta^8)
double fisheye_theta_d(const std::array<double, 4>& k, double theta) {
  const double t2 = theta * theta;
  return theta * (1 + t2 * (k[0] + t2 * (k[1] + t2 * (k[2] + t2 * k[3]))));
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string size_text(double w, double h) {
  return std::to_string(int(w)) + "x" + std::to_string(int(h));
}

// "k1 = 1000, p2 = 0.01": the lens's nonzero terms (d1..d3: FULL_OPENCV's k4..k6).
std::string coefficients(const Lens& lens) {
  std::string out;
  const auto add = [&](const std::string& name, double v) {
    if (v != 0) out += (out.empty() ? "" : ", ") + name + " = " + num(v);
  };
  for (int i = 0; i < 4; ++i) add("k" + std::to_string(i + 1), lens.k[std::size_t(i)]);
  for (int i = 0; i < 3; ++i) add("d" + std::to_string(i + 1), lens.d[std::size_t(i)]);
  add("p1", lens.p1);
  add("p2", lens.p2);
  return out;
}

}  // namespace

bool Lens::is_pinhole() const {
  const auto zero = [](const auto& a) {
    return std::all_of(a.begin(), a.end(), [](double v) { return v == 0; });
  };
  return model == Model::RadialTangential && zero(k) && zero(d) && p1 == 0 && p2 == 0;
}

void Lens::distort(double x, double y, double& xd, double& yd) const {
  const double r2 = x * x + y * y;
  if (model == Model::Fisheye) {
    const double r = std::sqrt(r2);
    const double s = r > 1e-12 ? fisheye_theta_d(k, std::atan(r)) / r : 1.0;
    xd = s * x, yd = s * y;
    return;
  }
  const double num = 1 + r2 * (k[0] + r2 * (k[1] + r2 * (k[2] + r2 * k[3])));
  const double den = 1 + r2 * (d[0] + r2 * (d[1] + r2 * d[2]));
  const double radial = num / den;
  xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x);
  yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y;
}

bool Lens::undistort_point(double xd, double yd, double& x, double& y) const {
  if (model == Model::Fisheye) {
    // Radial: solve theta_d(theta) = |(x_d, y_d)| for theta, then r = tan(theta).
    const double rd = std::hypot(xd, yd);
    if (rd < 1e-12) return x = xd, y = yd, true;
    double theta = std::min(rd, kMaxFisheyeAngle);
    for (int it = 0; it < 50; ++it) {
      const double h = 1e-7;
      const double f = fisheye_theta_d(k, theta) - rd;
      const double df = (fisheye_theta_d(k, theta + h) - fisheye_theta_d(k, theta - h)) / (2 * h);
      if (!(df > 0)) return false;  // theta_d no longer grows: the lens folds here
      theta = std::clamp(theta - f / df, 0.0, kMaxFisheyeAngle);
      if (std::abs(f) < 1e-12) break;
    }
    if (theta < kMaxFisheyeAngle && std::abs(fisheye_theta_d(k, theta) - rd) > 1e-9) return false;
    const double s = std::tan(theta) / rd;
    x = s * xd, y = s * yd;
    return true;
  }
  // Newton on (x, y) with a central-difference Jacobian, from the distorted point.
  x = xd, y = yd;
  for (int it = 0; it < 100; ++it) {
    double fx, fy;
    distort(x, y, fx, fy);
    fx -= xd, fy -= yd;
    if (std::abs(fx) < 1e-12 && std::abs(fy) < 1e-12) return true;
    const double h = 1e-7;
    double ax, ay, bx, by, cx, cy, ex, ey;
    distort(x + h, y, ax, ay);
    distort(x - h, y, bx, by);
    distort(x, y + h, cx, cy);
    distort(x, y - h, ex, ey);
    const double j00 = (ax - bx) / (2 * h), j10 = (ay - by) / (2 * h);
    const double j01 = (cx - ex) / (2 * h), j11 = (cy - ey) / (2 * h);
    const double det = j00 * j11 - j01 * j10;
    if (!(std::abs(det) > 1e-12)) return false;
    x -= (j11 * fx - j01 * fy) / det;
    y -= (-j10 * fx + j00 * fy) / det;
    if (!std::isfinite(x) || !std::isfinite(y)) return false;
  }
  double fx, fy;
  distort(x, y, fx, fy);
  return std::abs(fx - xd) < 1e-9 && std::abs(fy - yd) < 1e-9;
}

CameraIntrinsics undistorted_camera(const CameraIntrinsics& in, const Lens& lens, bool crop) {
  if (lens.is_pinhole()) return in;
  // The lens is inverted about the principal point; one outside the image is a wrong cx or cy,
  // whatever the distortion terms say.
  for (const auto& [name, c, extent] :
       {std::tuple{"cx", in.cx, in.width}, std::tuple{"cy", in.cy, in.height}}) {
    if (!(c >= 0 && c <= extent))
      throw Error(std::string("principal point ") + name + " = " + num(c) + " lies outside the " +
                  size_text(in.width, in.height) + " image (0 to " + std::to_string(extent) +
                  "); a lens with distortion terms is undistorted about it");
  }
  if (!crop) return in;
  // The input's border (pixel edges, not centers) in undistorted normalized coordinates: the
  // output rectangle lies inside every edge's innermost point.
  const double inf = std::numeric_limits<double>::infinity();
  double x_lo = -inf, x_hi = inf, y_lo = -inf, y_hi = inf;
  const int samples = 256;
  for (int s = 0; s <= samples; ++s) {
    const double t = double(s) / samples;
    const double u = t * in.width, v = t * in.height;
    const auto at = [&](double pu, double pv, double& x, double& y) {
      if (!lens.undistort_point((pu - in.cx) / in.fx, (pv - in.cy) / in.fy, x, y))
        throw Error("the lens cannot be inverted at pixel (" + std::to_string(pu) + ", " +
                    std::to_string(pv) + ") of the " + std::to_string(in.width) + "x" +
                    std::to_string(in.height) + " image: its distortion terms " +
                    coefficients(lens) +
                    " fold the image (crop_undistorted = false keeps the input's intrinsics "
                    "instead)");
    };
    double x, y;
    at(0, v, x, y), x_lo = std::max(x_lo, x);
    at(in.width, v, x, y), x_hi = std::min(x_hi, x);
    at(u, 0, x, y), y_lo = std::max(y_lo, y);
    at(u, in.height, x, y), y_hi = std::min(y_hi, y);
  }
  const double w = (x_hi - x_lo) * in.fx, h = (y_hi - y_lo) * in.fy;
  // Undistorted, a real lens's picture keeps about its size (barrel distortion grows it, a
  // pincushion shrinks it a little); a sliver of it means the terms are wrong, and training on
  // it would say nothing.
  if (!(w >= kMinKeptSide * in.width && h >= kMinKeptSide * in.height))
    throw Error("the distortion terms " + coefficients(lens) + " leave " +
                (w >= 0 && h >= 0 ? size_text(std::floor(w), std::floor(h)) : "nothing") +
                " of the " + size_text(in.width, in.height) +
                " image when it is cropped to what the lens saw (less than half of a side): they "
                "do not describe a real lens (a wrong camera model or misplaced values?)");
  // Of the focal lengths: a wide fisheye's rectangle would be huge at the input's.
  const double scale = std::min({1.0, 2.0 * in.width / w, 2.0 * in.height / h});
  CameraIntrinsics out;
  out.fx = in.fx * scale, out.fy = in.fy * scale;
  out.width = int(std::floor(w * scale)), out.height = int(std::floor(h * scale));
  // The output's left pixel edge (u = 0) is x_lo: u = fx x + cx. Centered in the slack of the
  // floor, so the rectangle stays inside on both sides.
  out.cx = -x_lo * out.fx - 0.5 * (w * scale - out.width);
  out.cy = -y_lo * out.fy - 0.5 * (h * scale - out.height);
  return out;
}

Image undistort(const Image& img,
                const CameraIntrinsics& in,
                const Lens& lens,
                const CameraIntrinsics& out) {
  Image res(out.width, out.height, img.channels);
  const int W = img.width, H = img.height, C = img.channels;
  const float* src = img.data.data();
#pragma omp parallel for schedule(static)
  for (int v = 0; v < out.height; ++v) {
    float* dst = res.data.data() + std::size_t(v) * out.width * C;
    const double y = (v + 0.5 - out.cy) / out.fy;
    for (int u = 0; u < out.width; ++u, dst += C) {
      double xd, yd;
      lens.distort((u + 0.5 - out.cx) / out.fx, y, xd, yd);
      // Back to array coordinates (pixel (i, j) has its center at (i + 0.5, j + 0.5)); fmax
      // before fmin maps NaN to 0, so no coordinate can index outside the image.
      const double sx = std::fmin(std::fmax(in.fx * xd + in.cx - 0.5, 0.0), double(W - 1));
      const double sy = std::fmin(std::fmax(in.fy * yd + in.cy - 0.5, 0.0), double(H - 1));
      const int x0 = int(sx), y0 = int(sy);
      const int dx = x0 + 1 < W ? C : 0;
      const std::size_t dy = y0 + 1 < H ? std::size_t(W) * C : 0;
      const float ax = float(sx - x0), ay = float(sy - y0);
      const float* p = src + (std::size_t(y0) * W + x0) * C;
      for (int c = 0; c < C; ++c) {
        const float top = p[c] + ax * (p[c + dx] - p[c]);
        const float bot = p[c + dy] + ax * (p[c + dy + dx] - p[c + dy]);
        dst[c] = top + ay * (bot - top);
      }
    }
  }
  return res;
}

}  // namespace splat
