// The CUDA backend's divergence check (Backend::diverged_groups, a counting kernel on the device)
// against the host's answer for the same state: every group, NaN and both infinities, in the first
// and the last slot, finite values beyond the limits (a few strays allowed), and a sane state.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/finite.h"
#include "engine/backend.h"
#include "train/backend_factory.h"
#include "train/config.h"

namespace splat {
namespace {

TrainState finite_state(std::size_t n) {
  TrainState st;
  st.params.sh_degree = 1;
  st.params.resize(n);
  st.params.for_each_group([](const char*, std::vector<float>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * float(i % 97) - 0.3f;
  });
  for (std::size_t i = 0; i < n; ++i) st.params.quats[i * 4] = 1.0f;
  st.adam_m = st.adam_v = st.params;
  return st;
}

TEST(FiniteCheckGpu, NamesTheGroupsWithNanOrInfOrBeyondTheLimitsLikeTheHost) {
  BackendConfig bc;
  bc.type = BackendKind::Cuda;
  auto backend = make_backend(bc);
  const std::size_t n = 70000;  // more than one grid-stride pass
  TrainState st = finite_state(n);
  backend->set_state(st);
  EXPECT_TRUE(backend->diverged_groups().empty());
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  std::size_t group = 0;
  std::vector<std::string> names;
  st.params.for_each_group([&](const char* name, std::vector<float>&) { names.push_back(name); });
  for (const std::string& name : names) {
    for (const bool last : {false, true}) {
      TrainState broken = finite_state(n);
      std::size_t g = 0;
      broken.params.for_each_group([&](const char*, std::vector<float>& v) {
        if (g++ == group) v[last ? v.size() - 1 : 0] = bad[(group + last) % 3];
      });
      backend->set_state(broken);
      EXPECT_EQ(backend->diverged_groups(), std::vector<std::string>{name})
          << (last ? "last slot" : "first slot");
      EXPECT_EQ(find_non_finite(broken.params)->group, name);
    }
    ++group;
  }
  // Finite values beyond the limits: means beyond the reach, log-scales above log(reach). One in
  // kStrayShare of a group's values may be (MCMC's noise carries a few huge splats far), one more
  // is a divergence; the host's implementation (Backend's) answers the same.
  const DivergenceLimits limits{100.0f};
  BackendConfig host;
  host.type = BackendKind::Cpu;
  const auto cpu = make_backend(host);
  for (const bool one_more : {false, true}) {
    SCOPED_TRACE(one_more ? "one more than the strays allowed" : "as many as the strays allowed");
    const std::size_t strays = 3 * n / kStrayShare + one_more;
    TrainState far = finite_state(n);
    for (std::size_t i = 0; i < strays; ++i) far.params.means[n * 3 - 1 - 2 * i] = 101.0f;
    TrainState huge = finite_state(n);
    for (std::size_t i = 0; i < strays; ++i) huge.params.log_scales[7 + i] = 4.7f;  // e^4.7 > 100
    for (const auto& [state, name] : {std::pair{&far, "means"}, std::pair{&huge, "log_scales"}}) {
      for (Backend* b : {backend.get(), cpu.get()}) {
        b->set_state(*state);
        EXPECT_EQ(b->diverged_groups(limits),
                  one_more ? std::vector<std::string>{name} : std::vector<std::string>{})
            << b->name();
        EXPECT_TRUE(b->diverged_groups().empty()) << b->name();
      }
    }
  }
  // Adam moments are not parameters: a NaN there is not a divergence of the model.
  TrainState moments = finite_state(n);
  moments.adam_v.means[5] = std::numeric_limits<float>::quiet_NaN();
  backend->set_state(moments);
  EXPECT_TRUE(backend->diverged_groups().empty());
}

}  // namespace
}  // namespace splat
