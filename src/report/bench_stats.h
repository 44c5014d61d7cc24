#pragma once
// The statistics of `splat bench`: percentiles of step times, the ABBA run order and the A/B
// adoption rule (DESIGN.md section 6). Pure functions, so the rule is testable without runs.
#include <string>
#include <vector>

namespace splat::bench {

struct Summary {
  std::size_t n = 0;
  double median = 0, p5 = 0, p95 = 0, mean = 0, stddev = 0;  // stddev: sample (n - 1)
};
// Percentiles by linear interpolation between order statistics (numpy's default).
Summary summarize(std::vector<double> values);

enum class Arm { A, B };
inline char arm_char(Arm a) {
  return a == Arm::A ? 'A' : 'B';
}

// Pair k runs A then B for even k, B then A for odd k: A B B A A B B A ... Drifts that are linear
// in time (thermal, page cache) cancel within every two pairs.
std::vector<Arm> abba_order(int pairs);

// The adoption rule, fixed before the runs and written into the report.
struct AbRule {
  double sigma_factor = 2.0;   // the speed-up must exceed sigma_factor * sigma of the paired deltas
  double min_relative = 0.01;  // ... and min_relative * median(train_seconds of A)
  double psnr_drop_db = 0.05;  // PSNR(B) >= PSNR(A) - psnr_drop_db
  std::string text() const;
};

struct PairResult {
  double seconds_a = 0, seconds_b = 0;
  double psnr_a = 0, psnr_b = 0;
};

enum class Verdict { AdoptB, KeepA, Inconclusive };
std::string to_string(Verdict v);

struct AbDecision {
  Verdict verdict = Verdict::Inconclusive;
  double median_delta = 0;    // median over pairs of seconds_b - seconds_a; negative: B is faster
  double relative_delta = 0;  // median_delta / median(seconds_a)
  double sigma = 0;           // sample standard deviation of the paired deltas
  double threshold = 0;  // max(sigma_factor * sigma, min_relative * median(seconds_a)), seconds
  double psnr_a = 0, psnr_b = 0;  // medians over the runs
  bool faster = false;            // -median_delta > threshold
  bool psnr_ok = false;           // psnr_b >= psnr_a - psnr_drop_db
  std::string reason;             // one sentence
};

// Applies the rule. Sigma needs two pairs: with fewer the verdict is inconclusive unless the PSNR
// guard already rejects B.
AbDecision decide(const AbRule& rule, const std::vector<PairResult>& pairs);

}  // namespace splat::bench
