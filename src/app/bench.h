#pragma once
// splat bench: replay (ms/iter from a saved state), parity, ab (the A/B gate of DESIGN.md
// section 6) and views (the training split for a peer trainer).
#include <string>
#include <vector>

#include "app/common.h"

namespace splat::app {

struct ReplayArgs {
  std::string checkpoint, data, out;
  int iters = 200, warmup = 20;
  int factor = 1;  // the training images and cameras downscaled by it (a coarse-to-fine step)
  ConfigArgs config;
};
int run_bench_replay(const ReplayArgs& args);

struct ParityArgs {
  std::string checkpoint, data, out;
  int view = 0;
  double tolerance = 5e-3;  // relative L2 per gradient group and on the loss
  ConfigArgs config;
};
int run_bench_parity(const ParityArgs& args);

struct AbArgs {
  std::string config_a, config_b, data, binary_a, binary_b, out = "bench_ab";
  int pairs = 3;
  double load_factor =
      1.5;  // a run whose sampled load max exceeds load_factor x cores is retried once
  // Stop before a pair that would end past this many seconds of this invocation (by its longest
  // pair so far), leaving a partial report; 0: run every pair.
  double stop_after = 0;
  bool resume = false;  // continue the partial report in `out` (same arms, data and pairs)
};
int run_bench_ab(const AbArgs& args);

// The views as splat trains and evaluates on them, for a peer trainer (app/bench_views.cpp).
struct ViewsArgs {
  std::string data, out;
  ConfigArgs config;
};
int run_bench_views(const ViewsArgs& args);

}  // namespace splat::app
