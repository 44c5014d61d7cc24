// splat: 3D Gaussian Splatting trainer and renderer.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "app/commands.h"
#include "core/error.h"
#include "core/suggest.h"
#include "distributed/communicator.h"
#include "splat_version.h"  // generated at build time (cmake/version.cmake)
#if SPLAT_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace {

// The commit, and the GPUs the build has kernels for.
std::string version_text() {
#if SPLAT_HAVE_CUDA
  return std::string(SPLAT_VERSION) + "\nCUDA architectures: " + splat::cuda::built_architectures();
#else
  return std::string(SPLAT_VERSION) + "\nCUDA backend: not built (CPU only)";
#endif
}

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
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  splat::app::Action action;
  splat::app::add_prepare(app, action);
  splat::app::add_train(app, action);
  splat::app::add_eval(app, action);
  splat::app::add_render(app, action);
  splat::app::add_export(app, action);
  splat::app::add_demo(app, action);
  splat::app::add_config(app, action);
  splat::app::add_bench(app, action);
  splat::app::add_view(app, action);
  // A mistyped command gets a suggestion ("trian": did you mean "train"?), not only CLI11's list.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::vector<std::string_view> views(names.begin(), names.end());
      const auto near = splat::closest(argv[1], views);
      std::fprintf(stderr, "error: unknown command '%s'%s (commands: %s; see splat --help)\n",
                   argv[1], near ? (" (did you mean '" + std::string(*near) + "'?)").c_str() : "",
                   splat::join(views).c_str());
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Under several ranks a bad argument on one must end them all, like any other error.
    if (e.get_exit_code() != 0 && splat::dist::world().size() > 1) return fail(e.what());
    return app.exit(e);
  }
  try {
    return action();
  } catch (const splat::Error& e) {
    return fail(e.what());
  } catch (const std::bad_alloc&) {
    return fail(
        "out of memory: the model, the images or a setting (model.init_points, densify.cap_max, "
        "data.downscale) need more memory than this machine has");
  } catch (const std::exception& e) {
    return fail(e.what(), "error (internal)");
  }
}
