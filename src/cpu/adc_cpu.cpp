#include "cpu/adc_cpu.h"

#include <string>

#include "core/error.h"

namespace splat::cpu {

void adc_accumulate(adc::Stats& stats,
                    const std::vector<int>& radii,
                    const std::vector<float>& v_means2d,
                    int width,
                    int height,
                    const std::vector<float>& v_means2d_abs) {
  const std::size_t n = stats.size();
  const bool abs = !v_means2d_abs.empty();
  if (radii.size() != 2 * n || v_means2d.size() != 2 * n || stats.grad2d.size() != n ||
      (abs && v_means2d_abs.size() != 2 * n))
    throw Error("adc_accumulate: statistics for " + std::to_string(n) + " splats, radii for " +
                std::to_string(radii.size() / 2) + ", gradients for " +
                std::to_string(v_means2d.size() / 2) +
                (abs ? ", absolute gradients for " + std::to_string(v_means2d_abs.size() / 2)
                     : std::string()));
  if (abs && stats.grad2d_abs.size() != n) stats.grad2d_abs.assign(n, 0.0f);
  const float half_w = 0.5f * float(width), half_h = 0.5f * float(height);
  for (std::size_t i = 0; i < n; ++i) {
    if (!adc::visible(&radii[2 * i])) continue;
    stats.grad2d[i] += adc::grad2d_norm(v_means2d[2 * i], v_means2d[2 * i + 1], half_w, half_h);
    if (abs)
      stats.grad2d_abs[i] +=
          adc::grad2d_norm(v_means2d_abs[2 * i], v_means2d_abs[2 * i + 1], half_w, half_h);
    stats.count[i] += 1;
  }
}

namespace {

// Where a slot of the refined model comes from.
enum class Kind { Kept, Clone, Child0, Child1 };
struct Source {
  std::uint32_t index;
  Kind kind;
};

}  // namespace

RefineStats adc_refine(TrainState& st, adc::Stats& stats, const AdcRefineSettings& s) {
  const std::size_t n = st.params.size();
  if (stats.size() != n || stats.grad2d.size() != n)
    throw Error("adc_refine: statistics for " + std::to_string(stats.size()) +
                " splats, the model has " + std::to_string(n));
  const adc::Thresholds t = adc::thresholds(s);
  std::vector<adc::Decision> d(n);
  RefineStats r;
  for (std::size_t i = 0; i < n; ++i) {
    d[i] =
        adc::decide(stats.grad2d[i], stats.count[i],
                    adc::max_log_scale(&st.params.log_scales[3 * i]), st.params.raw_opacity[i], t);
    r.cloned += d[i].action == adc::Action::Clone;
    r.split += d[i].action == adc::Action::Split;
  }
  // gsplat's order: duplicate() appends the clones, split() removes the parents and appends the
  // first children then the second children, remove() compacts what survives pruning.
  std::vector<Source> out;
  for (std::size_t i = 0; i < n; ++i)
    if (d[i].action != adc::Action::Split && !d[i].prune_self)
      out.push_back({std::uint32_t(i), Kind::Kept});
  for (std::size_t i = 0; i < n; ++i)
    if (d[i].action == adc::Action::Clone && !d[i].prune_self)
      out.push_back({std::uint32_t(i), Kind::Clone});
  for (Kind child : {Kind::Child0, Kind::Child1})
    for (std::size_t i = 0; i < n; ++i)
      if (d[i].action == adc::Action::Split && !d[i].prune_children)
        out.push_back({std::uint32_t(i), child});

  TrainState next;
  for (Gaussians* g : {&next.params, &next.adam_m, &next.adam_v}) {
    g->sh_degree = st.params.sh_degree;
    g->resize(out.size());
  }
  next.adam_step = st.adam_step;
  std::vector<std::vector<float>*> np, nm, nv;
  next.params.for_each_group([&](const char*, std::vector<float>& a) { np.push_back(&a); });
  next.adam_m.for_each_group([&](const char*, std::vector<float>& a) { nm.push_back(&a); });
  next.adam_v.for_each_group([&](const char*, std::vector<float>& a) { nv.push_back(&a); });
  int g = 0;
  for_each_group3(st, [&](const std::vector<float>& p, const std::vector<float>& m,
                          const std::vector<float>& v, std::size_t w) {
    for (std::size_t j = 0; j < out.size(); ++j) {
      const std::size_t src = out[j].index;
      const bool kept = out[j].kind == Kind::Kept;  // the rest are new: Adam starts from zero
      for (std::size_t k = 0; k < w; ++k) {
        (*np[g])[j * w + k] = p[src * w + k];
        (*nm[g])[j * w + k] = kept ? m[src * w + k] : 0.0f;
        (*nv[g])[j * w + k] = kept ? v[src * w + k] : 0.0f;
      }
    }
    ++g;
  });
  for (std::size_t j = 0; j < out.size(); ++j) {
    if (out[j].kind != Kind::Child0 && out[j].kind != Kind::Child1) continue;
    const std::size_t i = out[j].index;
    float offset[3];
    adc::split_offset(&st.params.log_scales[3 * i], &st.params.quats[4 * i], s.seed, i,
                      out[j].kind == Kind::Child0 ? 0 : 1, offset);
    for (int k = 0; k < 3; ++k) {
      next.params.means[3 * j + k] = st.params.means[3 * i + k] + offset[k];
      next.params.log_scales[3 * j + k] = adc::child_log_scale(st.params.log_scales[3 * i + k]);
    }
  }
  st = std::move(next);
  r.count = out.size();
  r.pruned = n + r.cloned + r.split - r.count;
  stats.reset(r.count);
  return r;
}

void adc_reset_opacity(TrainState& st, float max_opacity) {
  const float max_raw = adc::logit_threshold(double(max_opacity));
  for (float& raw : st.params.raw_opacity) raw = raw > max_raw ? max_raw : raw;
  std::fill(st.adam_m.raw_opacity.begin(), st.adam_m.raw_opacity.end(), 0.0f);
  std::fill(st.adam_v.raw_opacity.begin(), st.adam_v.raw_opacity.end(), 0.0f);
}

}  // namespace splat::cpu
