// splat config: print every config key with its default and meaning (configs/default.toml).
#include <cstdio>

#include "app/commands.h"

namespace splat::app {

void add_config(CLI::App& app, Action& action) {
  auto args = std::make_shared<ConfigArgs>();
  CLI::App* cmd =
      app.add_subcommand("config", "print the resolved config with every key documented");
  add_config_options(*cmd, *args);
  cmd->callback([args, &action] {
    action = [args] {
      if (args->config_file.empty() && args->sets.empty() && args->downscale == 0) {
        std::printf("%s", config_reference().c_str());
      } else {
        std::printf("%s", resolve_config(*args).to_toml().c_str());
      }
      return 0;
    };
  });
}

}  // namespace splat::app
