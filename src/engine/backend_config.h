#pragma once
// Which backend trains and how the CUDA backend runs a step: the settings every backend takes,
// and the one string <-> value map of their enums. The run configuration holds them as
// [backend] (train/config.h).
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

namespace splat {

enum class BackendKind { Auto, Cpu, Cuda };
// How the CUDA backend hands a step to the GPU (DESIGN.md section 4):
//   per_kernel: a host wait after every stage (exact per-stage times; slowest);
//   chained: the step's kernels queued on one stream, one host wait per step;
//   graph: the step captured once as a CUDA graph and replayed (captured again when shapes change);
//   auto: graph, the fastest on the H200 (A/B gate 3 in tools/gpu-machine/perf-log.md);
//     per_kernel when backend.timing is on; chained for batches (a graph replays one view per
//     step).
//     (The cpu backend runs every step to its end: auto only.)
enum class Submission { Auto, PerKernel, Chained, Graph };
// off: step i+1 is queued once step i has passed its wait; depth2: the host queues step i+1 while
// the GPU still runs step i (at most two steps in flight); auto: depth2, or off with timing or
// per_kernel.
enum class Pipelining { Auto, Off, Depth2 };
// The modes auto stands for (see above).
inline Submission resolved(Submission s, bool timing, std::int64_t batch_size = 1) {
  if (s != Submission::Auto) return s;
  return timing ? Submission::PerKernel : batch_size > 1 ? Submission::Chained : Submission::Graph;
}
inline Pipelining resolved(Pipelining p, Submission resolved_submission, bool timing) {
  if (p != Pipelining::Auto) return p;
  return timing || resolved_submission == Submission::PerKernel ? Pipelining::Off
                                                                : Pipelining::Depth2;
}

struct BackendConfig {
  BackendKind type = BackendKind::Auto;
  std::int64_t threads = 0;  // CPU backend: 0 = all cores
  bool timing = false;       // per-stage GPU timing table at the end of training
  Submission submission = Submission::Auto;
  Pipelining pipelining = Pipelining::Auto;
  // cuda: bit-identical results from the same seed (fixed-point gradient sums). On by default: on
  // the H200 it was about 6% faster per step than float atomics in replay, and A/B gate 3 adopted
  // it with graph and depth2 (tools/gpu-machine/perf-log.md).
  bool deterministic = true;
  // cuda: the rasterizer's Gaussian falloff exp(power) and its backward's 1 / (1 - alpha) from the
  // hardware's approximations (ex2.approx, rcp.approx: a few ulp); false: expf and IEEE division,
  // a second compiled variant of the two rasterizer kernels, chosen at launch. The cpu backend is
  // always accurate.
  bool fast_math = true;
  // cuda: GiB of training images kept on the GPU, in order; the others stay in host memory and are
  // copied in for each step that uses them. Negative: half the GPU's free memory when training
  // starts.
  double gpu_images_gb = -1;
};

inline constexpr std::pair<BackendKind, std::string_view> kBackendKindNames[] = {
    {BackendKind::Auto, "auto"}, {BackendKind::Cpu, "cpu"}, {BackendKind::Cuda, "cuda"}};
inline constexpr std::pair<Submission, std::string_view> kSubmissionNames[] = {
    {Submission::Auto, "auto"},
    {Submission::PerKernel, "per_kernel"},
    {Submission::Chained, "chained"},
    {Submission::Graph, "graph"}};
inline constexpr std::pair<Pipelining, std::string_view> kPipeliningNames[] = {
    {Pipelining::Auto, "auto"}, {Pipelining::Off, "off"}, {Pipelining::Depth2, "depth2"}};

template <class E>
std::string_view name_in(std::span<const std::pair<E, std::string_view>> names, E e) {
  for (const auto& [value, name] : names)
    if (value == e) return name;
  return "?";  // only reachable through a cast of an out-of-range integer
}
inline std::string_view to_string(BackendKind k) {
  return name_in<BackendKind>(kBackendKindNames, k);
}
inline std::string_view to_string(Submission k) {
  return name_in<Submission>(kSubmissionNames, k);
}
inline std::string_view to_string(Pipelining k) {
  return name_in<Pipelining>(kPipeliningNames, k);
}

}  // namespace splat
