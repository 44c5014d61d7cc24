// The CPU reference against golden vectors from an independent implementation (gsplat 1.5.3,
// ../shared/golden): catches convention errors that a CPU-vs-CUDA comparison cannot.
#include <gtest/gtest.h>

#include "cpu/pipeline.h"
#include "golden_util.h"

namespace splat {
namespace {

using namespace test;

template <class T>
void check_case(const std::string& name) {
  const GoldenCase c = load_case(name);
  const GaussiansT<T> g = golden_params<T>(c.j);
  const auto st = cpu::render_fwd(g, c.cam, c.rs);
  const auto v_image = c.j["loss"]["v_image"].get<std::vector<T>>();
  const auto v_alpha = c.j["loss"]["v_alpha"].get<std::vector<T>>();
  const GaussiansT<T> grads = cpu::render_bwd(g, c.cam, c.rs, st, v_image, v_alpha);
  GoldenResult r;
  r.image.assign(st.raster.image.begin(), st.raster.image.end());
  r.alpha.assign(st.raster.alpha.begin(), st.raster.alpha.end());
  r.radii = st.projected.radii;
  r.means2d.assign(st.projected.means2d.begin(), st.projected.means2d.end());
  r.depths.assign(st.projected.depths.begin(), st.projected.depths.end());
  r.conics.assign(st.projected.conics.begin(), st.projected.conics.end());
  r.grads = grads.template cast<double>();
  check_against_golden(name + (sizeof(T) == 4 ? " [cpu float]" : " [cpu double]"), c, r);
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, CpuFloat) {
  SPLAT_REQUIRE_SHARED("golden");
  check_case<float>(GetParam());
}
TEST_P(Golden, CpuDouble) {
  SPLAT_REQUIRE_SHARED("golden");
  check_case<double>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cases, Golden, ::testing::ValuesIn(kGoldenCases));

}  // namespace
}  // namespace splat
