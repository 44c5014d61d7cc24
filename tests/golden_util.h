#pragma once
// Golden vectors from an independent implementation (gsplat 1.5.3, ../shared/golden): loading a
// case and comparing with the tolerances both backends are held to.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/camera.h"
#include "core/gaussians.h"
#include "engine/settings.h"
#include "test_util.h"

namespace splat::test {

inline const std::vector<std::string> kGoldenCases = {
    "single_deg0", "random50_deg0", "random200_deg3_odd", "random200_deg3_antialiased",
    "random2000_deg3"};

struct GoldenCase {
  nlohmann::json j;
  Camera cam;
  RasterSettings rs;
};

inline GoldenCase load_case(const std::string& name) {
  GoldenCase c;
  std::ifstream f(shared_dir() / "golden" / (name + ".json"));
  c.j = nlohmann::json::parse(f);
  const auto vm = c.j["viewmat"].get<std::vector<double>>();
  const auto K = c.j["K"].get<std::vector<double>>();
  std::array<double, 16> w2c;
  std::copy(vm.begin(), vm.end(), w2c.begin());
  c.cam = Camera::from_w2c(w2c, c.j["width"], c.j["height"], K[0], K[4], K[2], K[5]);
  c.rs.sh_degree = c.j["sh_degree"];
  const auto bg = c.j["background"].get<std::vector<float>>();
  c.rs.background = {bg[0], bg[1], bg[2]};
  c.rs.antialiased = c.j["conventions"].value("rasterize_mode", "classic") == "antialiased";
  return c;
}

template <class T>
GaussiansT<T> golden_params(const nlohmann::json& j) {
  GaussiansT<T> g;
  g.sh_degree = j["sh_degree"];
  const auto& p = j["params"];
  g.means = p["means"].get<std::vector<T>>();
  g.quats = p["quats"].get<std::vector<T>>();
  g.log_scales = p["log_scales"].get<std::vector<T>>();
  g.raw_opacity = p["raw_opacity"].get<std::vector<T>>();
  g.sh = p["sh"].get<std::vector<T>>();
  return g;
}

struct Diff {
  double rel_l2 = 0, max_abs = 0;
  std::size_t worst = 0;
};

template <class A, class B>
Diff compare(const std::vector<A>& got, const std::vector<B>& want) {
  Diff d;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double e = double(got[i]) - double(want[i]);
    num += e * e;
    den += double(want[i]) * double(want[i]);
    if (std::abs(e) > d.max_abs) d.max_abs = std::abs(e), d.worst = i;
  }
  d.rel_l2 = std::sqrt(num / std::max(den, 1e-30));
  return d;
}

// Fails naming the case, the quantity and the worst element.
template <class A, class B>
void expect_close(const std::string& where,
                  const std::vector<A>& got,
                  const std::vector<B>& want,
                  double rel_l2_tol,
                  double max_abs_tol) {
  ASSERT_EQ(got.size(), want.size()) << where;
  const Diff d = compare(got, want);
  EXPECT_TRUE(d.rel_l2 <= rel_l2_tol && d.max_abs <= max_abs_tol)
      << where << ": rel L2 " << d.rel_l2 << " (tol " << rel_l2_tol << "), max abs " << d.max_abs
      << " (tol " << max_abs_tol << ") at element " << d.worst << ": got " << double(got[d.worst])
      << ", want " << double(want[d.worst]);
}

// Pixels: float32 sums in another order differ by ~1e-6, so 1e-4 absolute catches any convention
// change (a missing low-pass or a wrong cutoff moves pixels by >1e-3). A splat whose alpha sits
// within rounding of the 1/255 skip threshold may be kept by one implementation and skipped by the
// other: a few pixels (at most 0.1%) may differ by up to that one contribution, 1/255.
template <class A>
void expect_pixels_close(const std::string& where,
                         const std::vector<A>& got,
                         const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size()) << where;
  const Diff d = compare(got, want);
  std::size_t flips = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::abs(double(got[i]) - want[i]) > 1e-4) ++flips;
  EXPECT_TRUE(d.rel_l2 <= 1e-4 && d.max_abs <= 1.0 / 255 && flips <= want.size() / 1000)
      << where << ": rel L2 " << d.rel_l2 << ", " << flips << " of " << want.size()
      << " values off by more than 1e-4, max abs " << d.max_abs << " at element " << d.worst
      << ": got " << double(got[d.worst]) << ", want " << want[d.worst];
}

// What a backend produced for one golden case.
struct GoldenResult {
  std::vector<double> image, alpha, means2d, depths, conics;
  std::vector<int> radii;
  GaussiansT<double> grads;  // d (sum image * v_image + sum alpha * v_alpha) / d params
};

inline void check_against_golden(const std::string& tag,
                                 const GoldenCase& c,
                                 const GoldenResult& r) {
  const auto& out = c.j["outputs"];
  expect_pixels_close(tag + " image", r.image, out["image"].get<std::vector<double>>());
  expect_pixels_close(tag + " alpha", r.alpha, out["alpha"].get<std::vector<double>>());
  // Radii are integers: any difference is a convention difference.
  const auto radii = out["radii"].get<std::vector<int>>();
  EXPECT_EQ(r.radii, radii) << tag << " radii";
  // Projection outputs only where the golden kept the splat (culled entries are unspecified).
  auto masked = [&](std::vector<double> v, int dim) {
    for (std::size_t i = 0; i < radii.size() / 2; ++i)
      if (radii[i * 2] == 0 && radii[i * 2 + 1] == 0)
        for (int k = 0; k < dim; ++k) v[i * dim + k] = 0;
    return v;
  };
  auto want = [&](const char* key) { return out[key].get<std::vector<double>>(); };
  // Single float32 operations: relative 1e-5 of the value scale.
  expect_close(tag + " means2d", masked(r.means2d, 2), masked(want("means2d"), 2), 1e-5, 1e-3);
  expect_close(tag + " depths", masked(r.depths, 1), masked(want("depths"), 1), 1e-5, 1e-4);
  expect_close(tag + " conics", masked(r.conics, 3), masked(want("conics"), 3), 1e-4, 1e-2);

  double loss = 0;
  const auto v_image = c.j["loss"]["v_image"].get<std::vector<double>>();
  const auto v_alpha = c.j["loss"]["v_alpha"].get<std::vector<double>>();
  for (std::size_t i = 0; i < v_image.size(); ++i) loss += r.image[i] * v_image[i];
  for (std::size_t i = 0; i < v_alpha.size(); ++i) loss += r.alpha[i] * v_alpha[i];
  const double want_loss = c.j["loss"]["value"];
  EXPECT_NEAR(loss, want_loss, 1e-4 * std::max(1.0, std::abs(want_loss))) << tag << " loss";
  // Gradients sum many float32 terms in another order: 1e-3 relative L2 is ~100x the float noise
  // seen, yet a dropped term (e.g. the view-direction gradient into the means) moves them >1e-2.
  const auto& gj = c.j["grads"];
  r.grads.for_each_group([&](const char* group, const std::vector<double>& v) {
    const auto w = gj[group].template get<std::vector<double>>();
    double scale = 0;
    for (double x : w) scale = std::max(scale, std::abs(x));
    expect_close(tag + " grad " + group, v, w, 1e-3, 1e-3 * std::max(scale, 1e-6));
  });
}

}  // namespace splat::test
