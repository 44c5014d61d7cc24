// splat: 3D Gaussian Splatting trainer and renderer.
#include <cstdio>
#include <exception>
#include <optional>

#include "app/commands.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "splat_version.h"  // generated at build time (cmake/version.cmake)

namespace {

// A failure on one rank of several ends them all (the others would wait in a collective);
// alone, it is an error message and exit status 1.
int fail(const std::string& message, const char* label = "error") {
  splat::dist::Communicator& comm = splat::dist::world();
  if (comm.size() > 1) comm.abort(std::string(label) + ": " + message);
  std::fprintf(stderr, "\n%s: %s\n", label, message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<splat::dist::World> world;  // MPI when started by mpirun; outlives the action
  try {
    world.emplace(argc, argv);
  } catch (const splat::Error& e) {
    return fail(e.what());
  }
  CLI::App app{"splat: 3D Gaussian Splatting trainer and renderer"};
  app.set_version_flag("--version", SPLAT_VERSION);
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
    return fail(e.what());
  } catch (const std::exception& e) {
    return fail(e.what(), "error (internal)");
  }
}
