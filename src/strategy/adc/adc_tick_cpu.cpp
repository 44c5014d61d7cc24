#include "strategy/adc/adc_tick_cpu.h"

#include <algorithm>
#include <span>
#include <string>

#include "core/error.h"
#include "cpu/refine_cpu.h"
#include "distributed/communicator.h"

namespace splat {
namespace cpu {

void compact(TrainState& st, std::span<const Source> out, std::uint64_t seed) {
  TrainState next;
  for (Gaussians* g : {&next.params, &next.adam_m, &next.adam_v}) {
    g->sh_degree = st.params.sh_degree;
    g->resize(out.size());
  }
  next.adam_step = st.adam_step;
  next.appearance = std::move(st.appearance);  // per image, not per splat
  next.pose = std::move(st.pose);
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
    adc::split_offset(&st.params.log_scales[3 * i], &st.params.quats[4 * i], seed, i,
                      out[j].kind == Kind::Child0 ? 0 : 1, offset);
    for (int k = 0; k < 3; ++k) {
      next.params.means[3 * j + k] = st.params.means[3 * i + k] + offset[k];
      next.params.log_scales[3 * j + k] = adc::child_log_scale(st.params.log_scales[3 * i + k]);
    }
  }
  st = std::move(next);
}

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

  compact(st, out, s.seed);
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

void gather_adc_stats(RefineContext& ctx) {
  adc::Stats& stats = ctx.adc_stats;
  if (stats.size() != ctx.state.params.size()) stats.reset(ctx.state.params.size());
  if (ctx.comm.size() > 1) {
    ctx.comm.allreduce_sum(std::span(stats.grad2d), "ADC statistics all-reduce (grad2d)");
    ctx.comm.allreduce_sum(std::span(stats.count), "ADC statistics all-reduce (count)");
    if (!stats.grad2d_abs.empty())
      ctx.comm.allreduce_sum(std::span(stats.grad2d_abs), "ADC statistics all-reduce (grad2d_abs)");
  }
}

}  // namespace cpu

RefineStats AdcTick::run_cpu(cpu::RefineContext& ctx) {
  cpu::gather_adc_stats(ctx);
  return cpu::adc_refine(ctx.state, ctx.adc_stats, settings);
}

RefineStats OpacityResetTick::run_cpu(cpu::RefineContext& ctx) {
  cpu::adc_reset_opacity(ctx.state, max_opacity);
  return {.count = ctx.state.params.size()};
}

}  // namespace splat
