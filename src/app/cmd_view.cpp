// splat view MODEL [DATA] [--port P] [--bind ADDR] [--allow-host NAME]: the model in a web page,
// rendered by the browser.
#include <chrono>
#include <cstdio>
#include <thread>

#include "app/commands.h"
#include "app/common.h"
#include "train/interrupt.h"
#include "view/server.h"

namespace splat::app {

void add_view_options(CLI::App& cmd, view::ServeOptions& opts) {
  cmd.add_option(
      "--bind", opts.bind,
      "address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 or '::': every "
      "interface)");
  cmd.add_option("--allow-host", opts.allowed_hosts,
                 "a name the page may be opened by (Host header) besides localhost, the bound "
                 "address and, bound to the network, this machine's name and addresses "
                 "(repeatable)")
      ->allow_extra_args(false);  // `--allow-host NAME MODEL` leaves MODEL to the positional
}

void add_view(CLI::App& app, Action& action) {
  struct Args {
    std::string model, data;
    view::ServeOptions serve;
    ConfigArgs config;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("view", "serve a web page that renders a model (open it in a browser)");
  cmd->add_option("MODEL", args->model,
                  "model: .ply (standard or compressed), .splat, .spz or checkpoint.ckpt")
      ->required()
      ->check(input_file("model"));
  cmd->add_option("DATA", args->data, "dataset directory: its cameras become frusta to jump to");
  cmd->add_option("--port", args->serve.port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535));
  add_view_options(*cmd, args->serve);
  add_config_options(*cmd, args->config);
  cmd->callback([args, &action] {
    action = [args] {
      const Config cfg = resolve_model_config(args->config, args->model);
      std::optional<Dataset> data;
      if (!args->data.empty()) data = load_dataset(args->data, cfg);
      view::ViewServer server(args->serve);
      std::array<float, 3> background;
      for (int c = 0; c < 3; ++c) background[c] = float(cfg.data.background[c]);
      server.set_scene(data ? &*data : nullptr, background);
      TrainState model = load_model(args->model);
      const std::size_t n = model.params.size();
      server.publish(viewer_params(model));
      std::printf("serving %s (%zu splats) at %s (Ctrl-C stops)\n", args->model.c_str(), n,
                  server.url().c_str());
      std::fflush(stdout);
      install_interrupt_handlers();
      while (interrupt_signal() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return 0;
    };
  });
}

}  // namespace splat::app
