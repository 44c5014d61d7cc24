// splat bench ab: the A/B gate of DESIGN.md section 6. Every run is a child `splat train`, in ABBA
// order, with the load sampled while it runs; the rule is written into the report before any run.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include "app/bench.h"
#include "core/error.h"
#include "core/sha256.h"
#include "io/file_util.h"
#include "report/bench_stats.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace splat::app {

namespace {

// Samples the 1-minute load average (/proc/loadavg) once a second on its own thread.
class LoadSampler {
 public:
  LoadSampler() : thread_([this] { loop(); }) {}
  ~LoadSampler() { stop(); }
  // Stops sampling; mean and max of the samples (at least one, taken at start).
  std::pair<double, double> stop() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    double sum = 0, mx = 0;
    for (double s : samples_) sum += s, mx = std::max(mx, s);
    return {samples_.empty() ? 0 : sum / double(samples_.size()), mx};
  }
  std::size_t count() const { return samples_.size(); }

 private:
  static double read_load() {
    std::ifstream f("/proc/loadavg");
    double l = 0;
    f >> l;
    return l;
  }
  void loop() {
    std::unique_lock lock(mu_);
    do samples_.push_back(read_load());
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; }));
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::vector<double> samples_;
  std::thread thread_;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string command_output(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    if (pclose(p) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// What `binary --version` says (the commit it was built from); binaries older than the flag
// print nothing to stdout and fail.
std::string binary_version(const std::string& binary) {
  const std::string v = command_output(quote(binary) + " --version 2>/dev/null");
  return v.empty() ? "unknown (no --version)" : v;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The bits of a run's model: model.ply after its header, whose comment stamps the run.
std::string model_sha256(const fs::path& ply) {
  if (!fs::exists(ply)) return "missing";
  const std::string bytes = read_text(ply);
  const std::size_t body = bytes.find("end_header\n");
  return sha256_hex(std::string_view(bytes).substr(body == std::string::npos ? 0 : body));
}

// Whether the runs' models hold the same bits: all of them, and within each arm.
std::string same_bits(const json& runs) {
  std::map<std::string, std::set<std::string>> by_arm;
  std::set<std::string> all;
  for (const json& r : runs) {
    const std::string h = r.value("model_sha256", "missing");
    by_arm[r["arm"].get<std::string>()].insert(h);
    all.insert(h);
  }
  if (all.count("missing")) return "not known (a run wrote no model.ply)";
  if (all.size() == 1) return "the same bits in every run, A and B";
  std::string out = "A and B differ";
  for (const auto& [arm, hashes] : by_arm)
    out += std::string("; ") +
           (hashes.size() == 1 ? "the same bits in every " : "runs differ in ") + arm + " run" +
           (hashes.size() == 1 ? "" : "s");
  return out;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

struct Arms {
  std::string binary[2], config[2];
};

// One child training run; throws splat::Error naming its log if it fails.
json run_one(const Arms& arms,
             bench::Arm arm,
             const std::string& data,
             const fs::path& dir,
             int index,
             int pair) {
  const int a = arm == bench::Arm::A ? 0 : 1;
  fs::remove_all(dir);
  const fs::path log = dir.string() + ".log";
  const std::string cmd = quote(arms.binary[a]) + " train " + quote(data) + " --config " +
                          quote(arms.config[a]) + " --out " + quote(dir.string()) + " > " +
                          quote(log.string()) + " 2>&1";
  std::fprintf(stderr, "run %d (pair %d, %c): %s\n", index, pair, bench::arm_char(arm),
               dir.string().c_str());
  LoadSampler sampler;
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::size_t samples = sampler.count();
  const auto [load_mean, load_max] = sampler.stop();
  if (status != 0)
    throw Error("bench ab: run " + dir.string() + " failed (exit status " + std::to_string(status) +
                "); see " + log.string());
  const fs::path metrics = dir / "metrics.json";
  if (!fs::exists(metrics)) throw Error(metrics.string() + ": missing after the run");
  const json m = json::parse(read_text(metrics));
  json r;
  r["index"] = index;
  r["pair"] = pair;
  r["arm"] = std::string(1, bench::arm_char(arm));
  r["dir"] = dir.string();
  r["train_seconds"] = m.at("train_seconds").get<double>();
  r["psnr"] = m.at("psnr").get<double>();
  r["wall_seconds"] = wall;
  r["load_mean"] = load_mean;
  r["load_max"] = std::max(load_max, 0.0);
  r["load_samples"] = std::max<std::size_t>(samples, 1);
  const fs::path resolved = dir / "config.toml";
  r["config_toml_sha256"] = fs::exists(resolved) ? sha256_file(resolved.string()) : "missing";
  r["model_sha256"] = model_sha256(dir / "model.ply");
  std::fprintf(stderr, "  train %.3f s, PSNR %.3f dB, load mean %.2f max %.2f\n",
               r["train_seconds"].get<double>(), r["psnr"].get<double>(), load_mean, load_max);
  return r;
}

void write_json(const fs::path& p, const json& j) {
  write_atomically(p.string(), [&](std::ofstream& f) { f << j.dump(2) << "\n"; });
}

void write_markdown_to(std::ofstream& f, const json& rep);

void write_markdown(const fs::path& p, const json& rep) {
  write_atomically(p.string(), [&](std::ofstream& f) { write_markdown_to(f, rep); });
}

void write_markdown_to(std::ofstream& f, const json& rep) {
  f << "# splat bench ab\n\n";
  const std::string status = rep.value("status", std::string());
  const std::string pending =
      status == "partial" ? "(partial: continue with --resume)" : "(not run yet)";
  f << "**Verdict: " << rep.value("verdict", pending) << "**";
  if (rep.contains("decision")) f << " -- " << rep["decision"]["reason"].get<std::string>();
  f << "\n\n## Rule (written " << rep["rule"]["written_at"].get<std::string>()
    << ", before the runs)\n\n"
    << rep["rule"]["text"].get<std::string>() << "\n\n";
  for (const json& t : rep.value("resumed_at", json::array()))
    f << "Resumed " << t.get<std::string>() << " (the pairs before it kept).\n\n";
  f << "## Provenance\n\n";
  const json& pv = rep["provenance"];
  f << "- working directory's git commit: `" << pv["git_commit"].get<std::string>() << "`\n"
    << "- host: " << pv["host"].get<std::string>() << ", " << pv["cores"].get<int>() << " cores\n"
    << "- data: `" << pv["data"].get<std::string>() << "`\n";
  for (const char* arm : {"a", "b"})
    f << "- " << char(std::toupper(arm[0])) << ": binary `" << pv[arm]["binary"].get<std::string>()
      << "` sha256 `" << pv[arm]["binary_sha256"].get<std::string>() << "` (`"
      << pv[arm]["version"].get<std::string>() << "`), config `"
      << pv[arm]["config"].get<std::string>() << "` sha256 `"
      << pv[arm]["config_sha256"].get<std::string>() << "`\n";
  f << "\n## Runs (ABBA order)\n\n| # | pair | arm | train s | PSNR dB | load mean | load max | "
       "model sha256 | dir |\n|---|---|---|---|---|---|---|---|---|\n";
  char buf[512];
  for (const json& r : rep.value("runs", json::array())) {
    std::snprintf(buf, sizeof buf, "| %d | %d | %s | %.3f | %.3f | %.2f | %.2f | %.12s | %s |\n",
                  r["index"].get<int>(), r["pair"].get<int>(), r["arm"].get<std::string>().c_str(),
                  r["train_seconds"].get<double>(), r["psnr"].get<double>(),
                  r["load_mean"].get<double>(), r["load_max"].get<double>(),
                  r.value("model_sha256", "missing").c_str(), r["dir"].get<std::string>().c_str());
    f << buf;
  }
  if (!rep.value("retries", json::array()).empty()) {
    f << "\n## Retries (load evidence)\n\n";
    for (const json& r : rep["retries"]) f << "- " << r["evidence"].get<std::string>() << "\n";
  }
  if (rep.contains("decision")) {
    const json& d = rep["decision"];
    std::snprintf(buf, sizeof buf,
                  "\n## Decision\n\n- median delta (B - A): %+.4f s (%+.2f%%)\n- sigma of paired "
                  "deltas: %.4f s\n"
                  "- threshold: %.4f s\n- median PSNR: A %.3f dB, B %.3f dB\n",
                  d["median_delta"].get<double>(), 100.0 * d["relative_delta"].get<double>(),
                  d["sigma"].get<double>(), d["threshold"].get<double>(), d["psnr_a"].get<double>(),
                  d["psnr_b"].get<double>());
    f << buf << "- models: " << rep.value("models", std::string("not known")) << "\n";
  }
}

// The report of an earlier, unfinished invocation with the same arms, data and pair count, to
// continue from; throws naming the file and the first field that differs.
json resumed_report(const fs::path& path, const json& prov) {
  if (!fs::exists(path))
    throw Error(path.string() + ": no report to resume (run without --resume first)");
  json rep;
  try {
    rep = json::parse(read_text(path));
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not a bench ab report (" + e.what() + ")");
  }
  if (rep.value("status", std::string()) == "done")
    throw Error(path.string() + ": status is \"done\": this gate has its verdict");
  const json old = rep.value("provenance", json::object());
  for (const char* key : {"/data", "/pairs", "/a/binary_sha256", "/a/config_sha256",
                          "/b/binary_sha256", "/b/config_sha256"}) {
    const json::json_pointer ptr(key);
    const json was = old.contains(ptr) ? old.at(ptr) : json();
    if (was != prov.at(ptr))
      throw Error(path.string() + ": provenance" + std::string(key) + " is " + was.dump() +
                  ", this invocation's is " + prov.at(ptr).dump() +
                  ": --resume needs the same binaries, configs, data and --pairs");
  }
  rep["resumed_at"].push_back(now_utc());
  return rep;
}

}  // namespace

int run_bench_ab(const AbArgs& args) {
  const fs::path out(args.out);
  fs::create_directories(out);
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  Arms arms;
  arms.binary[0] = args.binary_a.empty() ? self : fs::absolute(args.binary_a).string();
  arms.binary[1] = args.binary_b.empty() ? self : fs::absolute(args.binary_b).string();
  arms.config[0] = fs::absolute(args.config_a).string();
  arms.config[1] = fs::absolute(args.config_b).string();
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const double load_limit = args.load_factor * cores;
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);

  const bench::AbRule rule;
  const std::string commit = command_output("git rev-parse HEAD 2>/dev/null");
  json prov;
  prov["git_commit"] = commit.empty() ? "unknown" : commit;
  prov["host"] = host;
  prov["cores"] = cores;
  prov["data"] = fs::absolute(args.data).string();
  prov["pairs"] = args.pairs;
  for (int a = 0; a < 2; ++a) {
    const char* key = a == 0 ? "a" : "b";
    prov[key] = {{"binary", arms.binary[a]},
                 {"binary_sha256", sha256_file(arms.binary[a])},
                 {"version", binary_version(arms.binary[a])},
                 {"config", arms.config[a]},
                 {"config_sha256", sha256_file(arms.config[a])}};
  }
  json rep;
  if (args.resume) {
    rep = resumed_report(out / "report.json", prov);
  } else {
    rep["command"] = "bench ab";
    rep["rule"] = {{"text", rule.text()},
                   {"sigma_factor", rule.sigma_factor},
                   {"min_relative", rule.min_relative},
                   {"psnr_drop_db", rule.psnr_drop_db},
                   {"load_retry_threshold", load_limit},
                   {"written_at", now_utc()}};
    rep["provenance"] = prov;
    rep["runs"] = json::array();
    rep["retries"] = json::array();
  }
  rep["status"] = "running";
  write_json(out / "report.json", rep);  // the rule is on disk before the first run
  write_markdown(out / "report.md", rep);

  const std::vector<bench::Arm> order = bench::abba_order(args.pairs);
  json& runs = rep["runs"];
  json& retries = rep["retries"];
  const auto started = std::chrono::steady_clock::now();
  double longest_pair = 0;  // wall seconds, this invocation
  for (int p = int(runs.size()) / 2; p < args.pairs; ++p) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (args.stop_after > 0 && longest_pair > 0 && elapsed + longest_pair > args.stop_after) {
      rep["status"] = "partial";
      write_json(out / "report.json", rep);
      write_markdown(out / "report.md", rep);
      std::printf(
          "stopped after %d of %d pairs (%.0f s, a pair takes up to %.0f s, --stop-after %.0f): "
          "continue with the same command and --resume\nwrote %s/{report.json, report.md}\n",
          p, args.pairs, elapsed, longest_pair, args.stop_after, out.string().c_str());
      return 0;
    }
    const auto pair_start = std::chrono::steady_clock::now();
    json pair_runs;
    for (int attempt = 0; attempt < 2; ++attempt) {
      pair_runs = json::array();
      for (int i = 2 * p; i < 2 * p + 2; ++i) {
        const std::string name = "run_" + std::to_string(i) + (attempt ? "_retry" : "");
        pair_runs.push_back(run_one(arms, order[i], args.data, out / name, i, p));
      }
      double worst = 0;
      for (const json& r : pair_runs) worst = std::max(worst, r["load_max"].get<double>());
      if (attempt == 1 || worst <= load_limit) break;
      char ev[256];
      std::snprintf(ev, sizeof ev,
                    "pair %d: load max %.2f > %.2f (%.2f x %d cores); runs %s, %s discarded and "
                    "the pair rerun once",
                    p, worst, load_limit, args.load_factor, cores,
                    pair_runs[0]["dir"].get<std::string>().c_str(),
                    pair_runs[1]["dir"].get<std::string>().c_str());
      std::fprintf(stderr, "%s\n", ev);
      retries.push_back({{"pair", p}, {"evidence", ev}, {"discarded_runs", pair_runs}});
    }
    for (const json& r : pair_runs) runs.push_back(r);
    longest_pair = std::max(
        longest_pair,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - pair_start).count());
    write_json(out / "report.json", rep);  // a killed gate resumes from the pairs done
    write_markdown(out / "report.md", rep);
  }

  std::vector<bench::PairResult> pairs(std::size_t(args.pairs));
  for (const json& r : runs) {
    bench::PairResult& pr = pairs[r["pair"].get<std::size_t>()];
    const bool is_a = r["arm"] == "A";
    (is_a ? pr.seconds_a : pr.seconds_b) = r["train_seconds"].get<double>();
    (is_a ? pr.psnr_a : pr.psnr_b) = r["psnr"].get<double>();
  }
  const bench::AbDecision d = bench::decide(rule, pairs);
  json resolved;
  for (const json& r : runs) {
    const std::string arm = r["arm"];
    if (!resolved.contains(arm))
      resolved[arm] = read_text(fs::path(r["dir"].get<std::string>()) / "config.toml");
  }
  rep["resolved_configs"] = resolved;
  rep["decision"] = {{"median_delta", d.median_delta},
                     {"relative_delta", d.relative_delta},
                     {"sigma", d.sigma},
                     {"threshold", d.threshold},
                     {"psnr_a", d.psnr_a},
                     {"psnr_b", d.psnr_b},
                     {"faster", d.faster},
                     {"psnr_ok", d.psnr_ok},
                     {"reason", d.reason}};
  rep["verdict"] = bench::to_string(d.verdict);
  rep["models"] = same_bits(runs);
  rep["status"] = "done";
  rep["finished_at"] = now_utc();
  write_json(out / "report.json", rep);
  write_markdown(out / "report.md", rep);
  std::printf("verdict: %s -- %s\nmodels: %s\nwrote %s/{report.json, report.md}\n",
              bench::to_string(d.verdict).c_str(), d.reason.c_str(),
              rep["models"].get<std::string>().c_str(), out.string().c_str());
  return 0;
}

}  // namespace splat::app
