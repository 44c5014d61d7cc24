#include "app/live_view.h"

#include <cstdio>
#include <thread>

#include "train/interrupt.h"

namespace splat::app {

namespace {
// A page polls /info every second; one that has not for this long is gone.
constexpr double kWatchedWithinSeconds = 5.0;
}  // namespace

LiveView::LiveView(const LiveViewOptions& opts,
                   const Dataset& data,
                   const Config& cfg,
                   const std::filesystem::path& out)
    : opts_(opts), total_(cfg.train.iterations), server_(opts.serve) {
  std::array<float, 3> background;
  for (int c = 0; c < 3; ++c) background[c] = float(cfg.data.background[c]);
  server_.set_scene(&data, background);
  server_.set_metrics_file((out / "metrics.jsonl").string());
  std::fprintf(stderr, "live view at %s (a snapshot every %.3g s while a page is open)\n",
               server_.url().c_str(), opts_.every);
}

void LiveView::progress(std::int64_t step, std::size_t splats, bool done) {
  server_.set_progress({{"step", step}, {"total", total_}, {"splats", splats}, {"done", done}});
  last_progress_ = Clock::now();
}

void LiveView::attach(Trainer& trainer, const Backend& backend) {
  server_.publish(backend.params());
  progress(trainer.iteration(), backend.num_splats(), false);
  last_snapshot_ = Clock::now();
  const auto period = std::chrono::duration<double>(opts_.every);
  trainer.set_snapshots(
      [this, &backend, period](std::int64_t step) {
        const auto now = Clock::now();
        if (now - last_progress_ >= std::chrono::milliseconds(250))
          progress(step, backend.num_splats(), false);
        return now - last_snapshot_ >= period &&
               server_.seconds_since_poll() < kWatchedWithinSeconds;
      },
      [this](std::int64_t, Gaussians params) {
        server_.publish(std::move(params));
        last_snapshot_ = Clock::now();
      });
}

void LiveView::finish_and_serve(const Trainer& trainer, const Backend& backend) {
  server_.publish(backend.params());
  progress(trainer.iteration(), backend.num_splats(), true);
  std::fprintf(stderr, "serving the final model at %s until Ctrl-C\n", server_.url().c_str());
  while (interrupt_signal() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

}  // namespace splat::app
