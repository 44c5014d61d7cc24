#pragma once
// A training session as the commands run it (splat train, splat demo): the output folder, the
// data, the trainer, and at the end the model files, the checkpoint, the evaluation, metrics.json
// and report.html.
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "io/dataset.h"
#include "io/run_dir.h"
#include "train/config.h"
#include "train/load.h"
#include "train/trainer.h"

namespace splat {

// Watches a session from a layer above it (the live viewer of splat train --view), on rank 0.
class SessionWatcher {
 public:
  virtual ~SessionWatcher() = default;
  // Before the first step, with the run's data, resolved config and output folder.
  virtual void start(const Dataset& data,
                     const Config& cfg,
                     const std::filesystem::path& out,
                     Trainer& trainer,
                     const Backend& backend) = 0;
  // After the outputs are written (not after a stop by SIGINT/SIGTERM).
  virtual void finish(const Trainer& trainer, const Backend& backend) = 0;
};

struct TrainRun {
  std::string data{}, out{};
  std::string resume{};  // checkpoint to continue from, or empty
  // A model whose splats start a fresh run (instead of model.init), or empty.
  std::string init_from{};
  bool overwrite = false;      // replace a previous run in `out` (otherwise it is refused)
  std::string kind = "train";  // the command, in the folder's manifest ("demo" replaces a demo)
  SessionWatcher* watcher = nullptr;                   // not owned; null for none
  std::function<void(const StepProgress&)> on_step{};  // Trainer::set_progress_hook, or empty
};

// The files of a training run in an output directory (a previous run is recognised by them).
const std::vector<std::string>& run_output_files();

// Opens run.out under the output-folder rules (io/run_dir.h), before any work: a writable
// directory, locked for this process, holding no previous run unless the run resumes it, replaces
// it (--overwrite) or is a demo replacing a demo; a previous run that saved no model or checkpoint
// (a run that failed or was killed early) is replaced with a note. The files of run_output_files()
// are claimed, so that a file of the user's at one of those names stops the run now.
std::unique_ptr<RunDir> open_out_dir(const TrainRun& run);

// Trains on run.data into run.out: model.ply, checkpoint.ckpt, config.toml, metrics.json,
// metrics.jsonl, report.html, renders/test/*.png. Returns the evaluation and 0, or, when
// SIGINT/SIGTERM stopped it, the exit status 128 + signal after saving checkpoint.ckpt and
// model.ply. Under MPI every rank trains (dist::world()); rank 0 alone prints, evaluates and
// writes the outputs, and the other ranks return an empty evaluation. `dir`: run.out already
// opened (open_out_dir), or null to open it here. Free space for the outputs at densify.cap_max is
// checked before training; at the end the model files are written before the checkpoint.
std::pair<EvalResult, int> run_training(const TrainRun& run,
                                        const Config& cfg,
                                        RunDir* dir = nullptr);

// One view's entry in metrics.json: name, psnr, ssim, cc_psnr.
nlohmann::json view_json(const ViewMetrics& v);

}  // namespace splat
