#include "train/periodic_eval.h"

#include <cstdio>

namespace splat {

PeriodicEval::PeriodicEval(std::int64_t every,
                           std::function<EvalResult()> evaluate,
                           History& history,
                           std::function<double()> clock,
                           std::function<void(const std::string&)> note)
    : every_(every),
      evaluate_(std::move(evaluate)),
      history_(history),
      clock_(std::move(clock)),
      note_(std::move(note)) {}

void PeriodicEval::on_due(const StepInfo& s) {
  const EvalResult e = evaluate_();
  history_.add(
      {{"step", s.completed},
       {"elapsed", clock_()},
       {"eval", {{"psnr", e.mean_psnr}, {"ssim", e.mean_ssim}, {"views", e.views.size()}}}});
  char line[128];
  std::snprintf(line, sizeof line, "eval at %lld: PSNR %.3f dB, SSIM %.4f over %zu test views",
                (long long)s.completed, e.mean_psnr, e.mean_ssim, e.views.size());
  note_(line);
}

}  // namespace splat
