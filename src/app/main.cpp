// splat: 3D Gaussian Splatting trainer and renderer.
#include <cstdio>
#include <exception>

#include "app/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"splat: 3D Gaussian Splatting trainer and renderer"};
  app.require_subcommand(1);
  splat::app::Action action;
  splat::app::add_train(app, action);
  splat::app::add_eval(app, action);
  splat::app::add_render(app, action);
  splat::app::add_demo(app, action);
  splat::app::add_config(app, action);
  splat::app::add_bench(app, action);
  CLI11_PARSE(app, argc, argv);
  try {
    return action();
  } catch (const splat::Error& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nerror (internal): %s\n", e.what());
  }
  return 1;
}
