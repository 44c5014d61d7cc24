// The CUDA backend's divergence check (Backend::diverged_groups, a counting kernel on the device)
// against the host's answer for the same state: every group, NaN and both infinities, in the first
// and the last slot, finite values beyond the limits, and a sane state.
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
  // Finite values beyond the limits: a mean beyond the reach, a log-scale above log(reach).
  const DivergenceLimits limits{100.0f};
  TrainState far = finite_state(n);
  far.params.means[n * 3 - 1] = 101.0f;
  backend->set_state(far);
  EXPECT_EQ(backend->diverged_groups(limits), std::vector<std::string>{"means"});
  EXPECT_TRUE(backend->diverged_groups().empty());
  TrainState huge = finite_state(n);
  huge.params.log_scales[7] = 4.7f;  // e^4.7 > 100
  backend->set_state(huge);
  EXPECT_EQ(backend->diverged_groups(limits), std::vector<std::string>{"log_scales"});
  // Adam moments are not parameters: a NaN there is not a divergence of the model.
  TrainState moments = finite_state(n);
  moments.adam_v.means[5] = std::numeric_limits<float>::quiet_NaN();
  backend->set_state(moments);
  EXPECT_TRUE(backend->diverged_groups().empty());
}

}  // namespace
}  // namespace splat
