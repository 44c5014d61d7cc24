#include "report/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace splat::bench {

namespace {
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * double(sorted.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}
}  // namespace

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = percentile(v, 0.5);
  s.p5 = percentile(v, 0.05);
  s.p95 = percentile(v, 0.95);
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / double(v.size() - 1));
  }
  return s;
}

std::vector<Arm> abba_order(int pairs) {
  std::vector<Arm> order;
  for (int k = 0; k < pairs; ++k) {
    const bool ab = k % 2 == 0;
    order.push_back(ab ? Arm::A : Arm::B);
    order.push_back(ab ? Arm::B : Arm::A);
  }
  return order;
}

std::string AbRule::text() const {
  return fmt(
      "B is adopted iff the median over pairs of train_seconds(B) - train_seconds(A) is below "
      "-max(%.3g sigma, %.3g%% of median train_seconds(A)), sigma the sample standard deviation of "
      "the paired deltas (at least 2 pairs), AND median PSNR(B) >= median PSNR(A) - %.3g dB; "
      "otherwise A is kept (B clearly slower or PSNR guard tripped) or the result is inconclusive "
      "(within noise). One retry of a pair whose sampled load exceeded the threshold, with the "
      "evidence recorded.",
      sigma_factor, 100.0 * min_relative, psnr_drop_db);
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::AdoptB:
      return "adopt B";
    case Verdict::KeepA:
      return "keep A";
    case Verdict::Inconclusive:
      return "inconclusive";
  }
  return "?";
}

AbDecision decide(const AbRule& rule, const std::vector<PairResult>& pairs) {
  AbDecision d;
  std::vector<double> delta, sec_a, psnr_a, psnr_b;
  for (const PairResult& p : pairs) {
    delta.push_back(p.seconds_b - p.seconds_a);
    sec_a.push_back(p.seconds_a);
    psnr_a.push_back(p.psnr_a);
    psnr_b.push_back(p.psnr_b);
  }
  const Summary sd = summarize(delta), sa = summarize(sec_a);
  d.median_delta = sd.median;
  d.relative_delta = sa.median > 0 ? sd.median / sa.median : 0;
  d.sigma = sd.stddev;
  d.threshold = std::max(rule.sigma_factor * d.sigma, rule.min_relative * sa.median);
  d.psnr_a = summarize(psnr_a).median;
  d.psnr_b = summarize(psnr_b).median;
  d.faster = -d.median_delta > d.threshold;
  d.psnr_ok = d.psnr_b >= d.psnr_a - rule.psnr_drop_db;
  const std::string speed = fmt("median delta %+.4g s (%+.2f%%), threshold %.4g s", d.median_delta,
                                100.0 * d.relative_delta, d.threshold);
  if (pairs.empty()) {
    d.reason = "no pairs ran";
  } else if (!d.psnr_ok) {
    d.verdict = Verdict::KeepA;
    d.reason =
        fmt("PSNR guard: B %.3f dB < A %.3f dB - %.3g dB", d.psnr_b, d.psnr_a, rule.psnr_drop_db) +
        "; " + speed;
  } else if (pairs.size() < 2) {
    d.reason = "one pair cannot estimate sigma; " + speed;
  } else if (d.faster) {
    d.verdict = Verdict::AdoptB;
    d.reason = "B faster beyond noise and PSNR within tolerance; " + speed;
  } else if (d.median_delta > d.threshold) {
    d.verdict = Verdict::KeepA;
    d.reason = "B slower beyond noise; " + speed;
  } else {
    d.reason = "difference within noise; " + speed;
  }
  return d;
}

}  // namespace splat::bench
