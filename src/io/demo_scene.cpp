#include "io/demo_scene.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/image.h"
#include "core/math.h"
#include "io/image_io.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using V3 = Vec3<double>;
using M3 = Mat3<double>;

constexpr double kPi = std::numbers::pi;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Camera placement. Radius 4 with the default 0.69 rad FOV frames the [-1, 1]^3 cube with a margin,
// like the NeRF-synthetic scenes. The band reaches a little below the equator so the undersides
// are seen too, and stops short of the pole, where "z up" is degenerate as an up vector.
constexpr double kCameraRadius = 4.0;
constexpr double kBandTop = 0.95;      // highest camera: z / radius
constexpr double kBandBottom = -0.25;  // lowest camera: about 14 degrees below the equator
constexpr double kNudgeMax = 0.6;      // radians of azimuth a test camera may move off its spiral
constexpr int kNudgeSteps = 24;        // candidate turns each way

// Lighting. The key light plus ambient peaks just under 1, so colors are rarely clipped; the fill
// comes from slightly below so the faces seen from below the equator are not flat ambient.
constexpr double kAmbient = 0.22;
constexpr double kSpecular = 0.12;  // mild: view dependence the SH colors can still fit
constexpr double kShininess = 20.0;

V3 hadamard(V3 a, V3 b) {
  return {a.x * b.x, a.y * b.y, a.z * b.z};
}
V3 mix(V3 a, V3 b, double t) {
  return a + (b - a) * t;
}

double smoothstep(double e0, double e1, double x) {
  const double t = std::clamp((x - e0) / (e1 - e0), 0.0, 1.0);
  return t * t * (3.0 - 2.0 * t);
}

// Rotation by `angle` about the unit `axis` (Rodrigues), local -> world.
M3 rotation(V3 axis, double angle) {
  const V3 a = normalize(axis);
  const double c = std::cos(angle), s = std::sin(angle), k = 1.0 - c;
  M3 r;
  r[0] = {c + a.x * a.x * k, a.x * a.y * k - a.z * s, a.x * a.z * k + a.y * s};
  r[1] = {a.y * a.x * k + a.z * s, c + a.y * a.y * k, a.y * a.z * k - a.x * s};
  r[2] = {a.z * a.x * k - a.y * s, a.z * a.y * k + a.x * s, c + a.z * a.z * k};
  return r;
}

// A frame whose local z is `axis` (local -> world): any completion will do for a torus.
M3 frame_with_z(V3 axis) {
  const V3 w = normalize(axis);
  const V3 u = normalize(cross(w, V3{0, 0, 1}));
  const V3 v = cross(w, u);
  M3 r;
  for (int i = 0; i < 3; ++i) r[i] = {u[i], v[i], w[i]};
  return r;
}

// Deterministic on every platform, unlike std:: distributions, whose algorithms are unspecified.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

enum class Object { kBox, kBigSphere, kMidSphere, kSmallSphere, kTorus };

struct Hit {
  double t = kInf;
  Object object = Object::kBox;
  V3 normal;          // world, unit length, facing out
  V3 local;           // the hit point in the object's own frame: textures are functions of it
  int face_axis = 0;  // box: which slab the ray entered through
};

struct Sphere {
  V3 center;
  double radius;
  Object id;
};

struct Light {
  V3 dir;    // towards the light, unit
  V3 color;  // intensity per channel
};

// A small still life: a turned box holding a striped sphere, two more spheres and a leaning
// torus. The box contains the origin, so the ray through every image center hits something.
class Scene {
 public:
  Scene() {
    box_rot_ = rotation({0, 0, 1}, 0.5);
    box_rot_t_ = transpose(box_rot_);
    torus_rot_ = frame_with_z({0.878, 0.479, 0.3});
    torus_rot_t_ = transpose(torus_rot_);
    lights_[0] = {normalize(V3{0.45, -0.55, 0.75}), V3{1.0, 0.97, 0.9} * 0.7};
    lights_[1] = {normalize(V3{-0.6, 0.45, -0.25}), V3{0.85, 0.9, 1.0} * 0.3};
  }

  // The shaded color of the nearest surface along the unit ray o + t d, or false on a miss.
  bool trace(V3 o, V3 d, V3* color) const {
    // Most background rays miss the sphere around the whole scene: skip the shapes for them.
    const double b = dot(o, d), c = dot(o, o) - kBoundRadius * kBoundRadius;
    if (b * b - c <= 0.0) return false;
    Hit h;
    intersect_box(o, d, &h);
    for (const Sphere& s : spheres_) intersect_sphere(s, o, d, &h);
    intersect_torus(o, d, &h);
    if (h.t == kInf) return false;
    *color = shade(h, d);
    return true;
  }

 private:
  void intersect_box(V3 o, V3 d, Hit* h) const {
    const V3 ol = box_rot_t_ * (o - box_center_), dl = box_rot_t_ * d;
    double t_near = -kInf, t_far = kInf;
    int axis = 0;
    for (int i = 0; i < 3; ++i) {
      if (std::abs(dl[i]) < 1e-12) {
        if (std::abs(ol[i]) > box_half_[i]) return;
        continue;
      }
      double t0 = (-box_half_[i] - ol[i]) / dl[i], t1 = (box_half_[i] - ol[i]) / dl[i];
      if (t0 > t1) std::swap(t0, t1);
      if (t0 > t_near) {
        t_near = t0;
        axis = i;
      }
      t_far = std::min(t_far, t1);
    }
    if (t_near > t_far || t_near <= 0.0 || t_near >= h->t) return;
    V3 nl{};
    nl[axis] = dl[axis] > 0 ? -1.0 : 1.0;
    h->t = t_near;
    h->object = Object::kBox;
    h->normal = box_rot_ * nl;
    h->local = ol + dl * t_near;
    h->face_axis = axis;
  }

  static void intersect_sphere(const Sphere& s, V3 o, V3 d, Hit* h) {
    const V3 oc = o - s.center;
    const double b = dot(oc, d), c = dot(oc, oc) - s.radius * s.radius;
    const double disc = b * b - c;
    if (disc <= 0.0) return;
    const double t = -b - std::sqrt(disc);
    if (t <= 0.0 || t >= h->t) return;
    h->t = t;
    h->object = s.id;
    h->local = oc + d * t;
    h->normal = h->local * (1.0 / s.radius);
  }

  double torus_sdf(V3 p) const {
    // sqrt rather than std::hypot: hypot's overflow care costs a third of the render here.
    const double q = std::sqrt(p.x * p.x + p.y * p.y) - torus_major_;
    return std::sqrt(q * q + p.z * p.z) - torus_minor_;
  }

  // Sphere tracing, confined to the bounding sphere: the SDF is exact, so the march cannot step
  // through the surface, and the analytic quartic's cancellation problems are avoided.
  void intersect_torus(V3 o, V3 d, Hit* h) const {
    const V3 ol = torus_rot_t_ * (o - torus_center_), dl = torus_rot_t_ * d;
    const double bound = torus_major_ + torus_minor_;
    const double b = dot(ol, dl), c = dot(ol, ol) - bound * bound;
    const double disc = b * b - c;
    if (disc <= 0.0) return;
    const double sq = std::sqrt(disc);
    double t = std::max(0.0, -b - sq);
    const double t_end = std::min(-b + sq, h->t);
    double dist = kInf;
    // Rays grazing the silhouette converge slowly; the rare one that runs out of steps counts as
    // a hit only if it is already within a hair of the surface.
    for (int i = 0; i < 256 && t < t_end; ++i) {
      dist = torus_sdf(ol + dl * t);
      if (dist < 1e-7) break;
      t += dist;
    }
    if (dist >= 1e-5 || t >= t_end) return;
    const V3 p = ol + dl * t;
    const double ring = torus_major_ / std::sqrt(p.x * p.x + p.y * p.y);
    h->t = t;
    h->object = Object::kTorus;
    h->local = p;
    h->normal = torus_rot_ * normalize(V3{p.x - p.x * ring, p.y - p.y * ring, p.z});
  }

  // Textures are deliberately low-frequency with smoothstep edges: sharp detail would cap the
  // PSNR a small splat model can reach, and the demo is meant to show convergence, not limits.
  V3 albedo(const Hit& h) const {
    switch (h.object) {
      case Object::kBox: {
        // Soft checker on each face, in the face's own two coordinates (a 3-D checker would
        // blur out on faces whose fixed coordinate falls near a cell boundary).
        const int a = (h.face_axis + 1) % 3, b = (h.face_axis + 2) % 3;
        constexpr double kCell = 0.25;
        const double s = std::sin(kPi * h.local[a] / kCell) * std::sin(kPi * h.local[b] / kCell);
        return mix(V3{0.85, 0.42, 0.16}, V3{0.93, 0.87, 0.72}, smoothstep(-0.7, 0.7, s));
      }
      case Object::kBigSphere: {
        // Latitude stripes, bent a little by n.x so they are not rotationally symmetric (a
        // function of the normal, not of atan2, so there is no seam or pole pinch).
        const V3 n = h.normal;
        const double w = std::sin(5.0 * std::asin(std::clamp(n.z, -1.0, 1.0)) + 1.2 * n.x);
        return mix(V3{0.14, 0.3, 0.75}, V3{0.9, 0.9, 0.84}, smoothstep(-0.6, 0.6, w));
      }
      case Object::kMidSphere: {
        const V3 n = h.normal;
        const double t = std::clamp(0.5 + 0.4 * n.z + 0.2 * n.x * n.y, 0.0, 1.0);
        return mix(V3{0.16, 0.55, 0.24}, V3{0.95, 0.82, 0.28}, smoothstep(0.0, 1.0, t));
      }
      case Object::kSmallSphere:
        return mix(V3{0.82, 0.16, 0.12}, V3{0.95, 0.55, 0.35}, smoothstep(-0.8, 0.8, h.normal.z));
      case Object::kTorus: {
        // Six soft bands around the ring; sin(6 * theta) is continuous across atan2's seam.
        const double w = std::sin(6.0 * std::atan2(h.local.y, h.local.x));
        return mix(V3{0.45, 0.22, 0.68}, V3{0.96, 0.62, 0.78}, smoothstep(-0.5, 0.5, w));
      }
    }
    return {0.5, 0.5, 0.5};
  }

  // Lambert from two directional lights plus ambient, and a mild Blinn-Phong highlight.
  V3 shade(const Hit& h, V3 d) const {
    const V3 n = h.normal;
    V3 light{kAmbient, kAmbient, kAmbient};
    V3 spec{};
    for (const Light& l : lights_) {
      const double ndl = dot(n, l.dir);
      if (ndl <= 0.0) continue;
      light += l.color * ndl;
      const V3 half = normalize(l.dir - d);
      spec += l.color * (kSpecular * std::pow(std::max(0.0, dot(n, half)), kShininess));
    }
    const V3 c = hadamard(albedo(h), light) + spec;
    return {std::clamp(c.x, 0.0, 1.0), std::clamp(c.y, 0.0, 1.0), std::clamp(c.z, 0.0, 1.0)};
  }

  // Encloses every shape: the farthest surface points (mid sphere, torus) are 1.09 from the origin.
  static constexpr double kBoundRadius = 1.2;
  // All shapes stay inside [-1, 1]^3 (at most 0.9 along any axis) and within 1.09 of the origin,
  // which keeps them clear of the image borders from radius 4 at the default FOV.
  V3 box_center_{0.0, 0.0, -0.12};
  V3 box_half_{0.5, 0.36, 0.28};
  M3 box_rot_, box_rot_t_;
  std::array<Sphere, 3> spheres_{{
      {{0.08, 0.04, 0.52}, 0.38, Object::kBigSphere},   // rests on (sinks into) the box top
      {{-0.62, 0.5, -0.18}, 0.26, Object::kMidSphere},  // beside the box
      {{0.55, -0.62, -0.28}, 0.17, Object::kSmallSphere},
  }};
  V3 torus_center_{0.6, 0.45, -0.05};
  double torus_major_ = 0.25, torus_minor_ = 0.085;
  M3 torus_rot_, torus_rot_t_;
  std::array<Light, 2> lights_;
};

using Pose = std::array<double, 16>;  // camera-to-world, row-major, OpenGL camera axes

// Camera at radius * dir looking at the origin with world z up and no roll, in the
// Blender/NeRF-synthetic convention: camera x right, y up, looking down its -z.
Pose look_at_origin(V3 dir) {
  const V3 z = normalize(dir);
  const V3 x = normalize(cross(V3{0, 0, 1}, z));
  const V3 y = cross(z, x);
  const V3 p = z * kCameraRadius;
  return {x.x, y.x, z.x, p.x, x.y, y.y, z.y, p.y, x.z, y.z, z.z, p.z, 0, 0, 0, 1};
}

// n directions spread evenly over the camera band: equal steps in z (equal area on a sphere)
// and golden-angle steps in azimuth, starting at azimuth phi0.
std::vector<V3> spiral(int n, double phi0) {
  const double golden = kPi * (3.0 - std::sqrt(5.0));
  std::vector<V3> dirs;
  dirs.reserve(n);
  for (int i = 0; i < n; ++i) {
    const double z = kBandTop - (i + 0.5) / n * (kBandTop - kBandBottom);
    const double r = std::sqrt(1.0 - z * z), phi = phi0 + golden * i;
    dirs.push_back({r * std::cos(phi), r * std::sin(phi), z});
  }
  return dirs;
}

// The direction at the same height as dir, turned by at most kNudgeMax in azimuth, that is
// farthest from every training camera (the smallest turn among equals). Keeping the height keeps
// the test set spread over the band like the training set.
V3 nudge_away(V3 dir, const std::vector<V3>& train) {
  const double r = std::sqrt(dir.x * dir.x + dir.y * dir.y), phi = std::atan2(dir.y, dir.x);
  V3 best = dir;
  double best_dist = -1.0;
  for (int k = 0; k <= 2 * kNudgeSteps; ++k) {
    // 0, +1, -1, +2, -2, ... steps: the smallest turn wins ties.
    const int step = (k + 1) / 2 * (k % 2 == 1 ? 1 : -1);
    const double a = phi + kNudgeMax * step / kNudgeSteps;
    const V3 cand{r * std::cos(a), r * std::sin(a), dir.z};
    double dist = kInf;
    for (const V3& t : train) dist = std::min(dist, norm(cand - t));
    if (dist > best_dist + 1e-12) {
      best_dist = dist;
      best = cand;
    }
  }
  return best;
}

Image render_view(const Scene& scene, const Pose& c2w, const DemoSceneOptions& opts) {
  Image img(opts.width, opts.height, 4, 0.0f);
  // NeRF-synthetic intrinsics: focal from the horizontal FOV, square pixels, centered.
  const double f = 0.5 * opts.width / std::tan(0.5 * opts.camera_angle_x);
  const double cx = 0.5 * opts.width, cy = 0.5 * opts.height;
  const V3 ax{c2w[0], c2w[4], c2w[8]}, ay{c2w[1], c2w[5], c2w[9]}, az{c2w[2], c2w[6], c2w[10]};
  const V3 origin{c2w[3], c2w[7], c2w[11]};
  const int s = opts.supersample;
  const double inv_samples = 1.0 / (s * s);
#pragma omp parallel for schedule(dynamic, 4)
  for (int y = 0; y < opts.height; ++y) {
    for (int x = 0; x < opts.width; ++x) {
      // A regular s x s grid inside the pixel: coverage becomes alpha, and the mean color of the
      // covered samples becomes the (straight-alpha) color.
      V3 sum{};
      int hits = 0;
      for (int sy = 0; sy < s; ++sy) {
        for (int sx = 0; sx < s; ++sx) {
          const double u = (x + (sx + 0.5) / s - cx) / f, v = (y + (sy + 0.5) / s - cy) / f;
          const V3 d = normalize(ax * u - ay * v - az);
          V3 c;
          if (scene.trace(origin, d, &c)) {
            sum += c;
            ++hits;
          }
        }
      }
      if (hits == 0) continue;
      const V3 mean = sum * (1.0 / hits);
      img.at(x, y, 0) = static_cast<float>(mean.x);
      img.at(x, y, 1) = static_cast<float>(mean.y);
      img.at(x, y, 2) = static_cast<float>(mean.z);
      img.at(x, y, 3) = static_cast<float>(hits * inv_samples);
    }
  }
  return img;
}

void make_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir.string() + ": cannot create directory: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw Error(dir.string() + ": cannot create directory");
}

void write_split(const fs::path& dir,
                 const std::string& split,
                 const std::vector<V3>& dirs,
                 const Scene& scene,
                 const DemoSceneOptions& opts) {
  make_directory(dir / split);
  nlohmann::json frames = nlohmann::json::array();
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    const Pose c2w = look_at_origin(dirs[i]);
    const std::string name = "r_" + std::to_string(i);
    write_png((dir / split / (name + ".png")).string(), render_view(scene, c2w, opts));
    nlohmann::json matrix = nlohmann::json::array();
    for (int r = 0; r < 4; ++r)
      matrix.push_back({c2w[r * 4], c2w[r * 4 + 1], c2w[r * 4 + 2], c2w[r * 4 + 3]});
    // file_path without an extension, as in the original Lego transforms.
    frames.push_back({{"file_path", "./" + split + "/" + name}, {"transform_matrix", matrix}});
  }
  const nlohmann::json doc = {{"camera_angle_x", opts.camera_angle_x}, {"frames", frames}};
  const fs::path path = dir / ("transforms_" + split + ".json");
  std::ofstream out(path, std::ios::binary);
  out << doc.dump(4) << '\n';
  out.close();
  if (!out) throw Error(path.string() + ": cannot write file");
}

void check_options(const DemoSceneOptions& o) {
  auto fail = [](const std::string& field, const std::string& what) {
    throw Error("demo scene: " + field + ": " + what);
  };
  if (o.width <= 0 || o.height <= 0) fail("width/height", "must be positive");
  if (o.train_views < 1) fail("train_views", "must be at least 1");
  if (o.test_views < 0) fail("test_views", "must not be negative");
  if (o.supersample < 1 || o.supersample > 16) fail("supersample", "must be in [1, 16]");
  if (!(o.camera_angle_x > 0.0 && o.camera_angle_x < kPi))
    fail("camera_angle_x", "must be in (0, pi)");
}

// The floor of write_demo_orbit: the plane z = kFloorZ, just under the box, a 6 x 6 square of
// cells of hashed grey levels (two sizes mixed): the fine detail a real video's surroundings give
// structure from motion, which the objects' soft textures alone do not.
constexpr double kFloorZ = -0.45, kFloorHalf = 3.0;

double cell_noise(double x, double y, double cell) {
  const auto ix = static_cast<std::uint64_t>(std::floor(x / cell) + 1e6);
  const auto iy = static_cast<std::uint64_t>(std::floor(y / cell) + 1e6);
  SplitMix64 h{ix * 0x9e3779b97f4a7c15ULL ^ iy};
  return h.uniform();
}

// The floor's colour along the unit ray o + t d, or the grey background where it misses.
V3 floor_color(V3 o, V3 d) {
  const V3 grey{0.5, 0.5, 0.5};
  if (d.z >= -1e-9) return grey;
  const double t = (kFloorZ - o.z) / d.z;
  const V3 p = o + d * t;
  if (std::abs(p.x) > kFloorHalf || std::abs(p.y) > kFloorHalf) return grey;
  const double v = 0.15 + 0.5 * cell_noise(p.x, p.y, 0.06) + 0.3 * cell_noise(p.x, p.y, 0.25);
  return V3{0.9, 0.8, 0.65} * v;
}

Image orbit_frame(const Scene& scene, const Pose& c2w, const DemoSceneOptions& opts) {
  Image rgba = render_view(scene, c2w, opts);
  Image out(opts.width, opts.height, 3);
  const double f = 0.5 * opts.width / std::tan(0.5 * opts.camera_angle_x);
  const V3 ax{c2w[0], c2w[4], c2w[8]}, ay{c2w[1], c2w[5], c2w[9]}, az{c2w[2], c2w[6], c2w[10]};
  const V3 origin{c2w[3], c2w[7], c2w[11]};
  const int s = opts.supersample;
  for (int y = 0; y < opts.height; ++y)
    for (int x = 0; x < opts.width; ++x) {
      V3 floor{};
      for (int sy = 0; sy < s; ++sy)
        for (int sx = 0; sx < s; ++sx) {
          const double u = (x + (sx + 0.5) / s - 0.5 * opts.width) / f;
          const double v = (y + (sy + 0.5) / s - 0.5 * opts.height) / f;
          floor += floor_color(origin, normalize(ax * u - ay * v - az)) * (1.0 / (s * s));
        }
      // Every shape is above the floor, so it is in front wherever it covers the pixel.
      const float a = rgba.at(x, y, 3);
      for (int c = 0; c < 3; ++c)
        out.at(x, y, c) = rgba.at(x, y, c) * a + float(floor[c]) * (1.0f - a);
    }
  return out;
}

}  // namespace

void write_demo_scene(const std::string& dir, const DemoSceneOptions& opts) {
  check_options(opts);
  const fs::path root(dir);
  make_directory(root);

  // The seed only turns the two spirals. Each test camera then moves into the nearest gap
  // between training cameras at its height, so no test view nearly duplicates a training view.
  SplitMix64 rng{opts.seed};
  const std::vector<V3> train = spiral(opts.train_views, 2.0 * kPi * rng.uniform());
  std::vector<V3> test = spiral(opts.test_views, 2.0 * kPi * rng.uniform());
  for (V3& d : test) d = nudge_away(d, train);

  const Scene scene;
  write_split(root, "train", train, scene, opts);
  write_split(root, "test", test, scene, opts);
}

void write_demo_orbit(const std::string& dir,
                      int frames,
                      double elevation,
                      double arc,
                      const DemoSceneOptions& opts) {
  check_options(opts);
  if (frames < 1) throw Error("demo orbit: frames: must be at least 1");
  make_directory(dir);
  const Scene scene;
  for (int i = 0; i < frames; ++i) {
    const double phi = arc * i / std::max(1, frames - 1);
    const V3 d{std::cos(phi) * std::cos(elevation), std::sin(phi) * std::cos(elevation),
               std::sin(elevation)};
    char name[32];
    std::snprintf(name, sizeof name, "frame_%04d.png", i);
    write_png((fs::path(dir) / name).string(), orbit_frame(scene, look_at_origin(d), opts));
  }
}

}  // namespace splat
