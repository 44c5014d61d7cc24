#include "strategy/strategy.h"

#include <deque>

#include "core/error.h"
#include "core/suggest.h"
#include "strategy/adc/adc_strategy.h"
#include "strategy/fastgs/fastgs_strategy.h"
#include "strategy/mcmc/mcmc_strategy.h"

namespace splat {

namespace {

class NoDensifier final : public Densifier {
 public:
  void step_settings(std::int64_t, StepSettings&) const override {}
  std::optional<RefineStats> after_step(std::int64_t, Backend&) override { return std::nullopt; }
};

struct Entry {
  std::string name;
  StrategyFactory make;
};

// The registry, with the built-in strategies: one line each. A deque, so that a registration
// moves no name that strategy_names() has handed out.
std::deque<Entry>& registry() {
  static std::deque<Entry> r = {
      {"none", [](const StrategyContext&) { return std::make_unique<NoDensifier>(); }},
      {"mcmc", make_mcmc_densifier},
      {"adc", make_adc_densifier},
      {"fastgs", make_fastgs_densifier},
  };
  return r;
}

const Entry* find(std::string_view name) {
  for (const Entry& e : registry())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace

void register_strategy(std::string name, StrategyFactory make) {
  if (find(name)) throw Error("register_strategy: a strategy named '" + name + "' exists");
  registry().push_back({std::move(name), std::move(make)});
}

std::vector<std::string_view> strategy_names() {
  std::vector<std::string_view> out;
  for (const Entry& e : registry()) out.push_back(e.name);
  return out;
}

std::optional<std::string> unknown_strategy(std::string_view name) {
  if (find(name)) return std::nullopt;
  std::string msg = "densify.strategy = \"" + std::string(name) + "\" is not a strategy (";
  if (auto s = closest(name, strategy_names())) msg += "did you mean \"" + std::string(*s) + "\"? ";
  return msg + "registered: " + join(strategy_names()) + ")";
}

std::unique_ptr<Densifier> make_densifier(const StrategyContext& ctx) {
  if (auto msg = unknown_strategy(ctx.cfg.strategy)) throw Error(*msg);
  return find(ctx.cfg.strategy)->make(ctx);
}

}  // namespace splat
