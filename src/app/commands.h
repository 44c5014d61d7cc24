#pragma once
// Each subcommand registers itself on the CLI and sets the action main() runs.
#include <CLI/CLI.hpp>
#include <functional>

#include "app/common.h"

namespace splat::app {

using Action = std::function<int()>;

// CLI11's ExistingFile with io/read_file.h's messages: what the path is when it is no file to
// read (missing, a directory, a FIFO, a device, unreadable); `what` names the file ("model").
CLI::Validator input_file(const char* what);

// --config, --set and --downscale, shared by every subcommand that resolves a config.
void add_config_options(CLI::App& cmd, ConfigArgs& args);
// --bind, shared by `view` and `train --view`.
void add_view_options(CLI::App& cmd, view::ServeOptions& opts);

void add_train(CLI::App& app, Action& action);
void add_eval(CLI::App& app, Action& action);
void add_render(CLI::App& app, Action& action);
void add_export(CLI::App& app, Action& action);
void add_demo(CLI::App& app, Action& action);
void add_config(CLI::App& app, Action& action);
void add_bench(CLI::App& app, Action& action);
void add_view(CLI::App& app, Action& action);
void add_prepare(CLI::App& app, Action& action);

}  // namespace splat::app
