#pragma once
// `splat train --view`: the viewer's server during training. The trainer hands it a snapshot of
// the parameters every `every` seconds while a page is open (it polls /info each second), so an
// unwatched run copies nothing; the page reloads the model when the version advances and plots
// metrics.jsonl. After training the final model stays served until Ctrl-C.
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include "io/dataset.h"
#include "train/config.h"
#include "train/session.h"
#include "train/trainer.h"
#include "view/server.h"

namespace splat::app {

struct LiveViewOptions {
  view::ServeOptions serve;
  double every = 2.0;  // seconds between snapshots while watched
};

class LiveView {
 public:
  LiveView(const LiveViewOptions& opts,
           const Dataset& data,
           const Config& cfg,
           const std::filesystem::path& out);
  // Publishes the starting model and installs the trainer's snapshot hook.
  void attach(Trainer& trainer, const Backend& backend);
  // The final model and progress; then serves until SIGINT/SIGTERM.
  void finish_and_serve(const Trainer& trainer, const Backend& backend);

 private:
  using Clock = std::chrono::steady_clock;
  void progress(std::int64_t step, std::size_t splats, bool done);

  LiveViewOptions opts_;
  std::int64_t total_;
  view::ViewServer server_;
  Clock::time_point last_snapshot_{}, last_progress_{};
};

// The live viewer as a training session's watcher (train/session.h): started with the session.
class LiveViewWatcher : public SessionWatcher {
 public:
  explicit LiveViewWatcher(const LiveViewOptions& opts) : opts_(opts) {}
  void start(const Dataset& data,
             const Config& cfg,
             const std::filesystem::path& out,
             Trainer& trainer,
             const Backend& backend) override {
    view_.emplace(opts_, data, cfg, out);
    view_->attach(trainer, backend);
  }
  void finish(const Trainer& trainer, const Backend& backend) override {
    view_->finish_and_serve(trainer, backend);
  }

 private:
  LiveViewOptions opts_;
  std::optional<LiveView> view_;
};

}  // namespace splat::app
