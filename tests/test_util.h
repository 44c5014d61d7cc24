#pragma once
// Helpers shared by the tests: where the real data is, and running the CLI.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace splat::test {

// ../shared beside the repository (override with SPLAT_SHARED).
inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("SPLAT_SHARED")) return env;
  return SPLAT_SHARED_DIR;
}

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the splat binary with the given argument string through the shell.
RunResult run_splat(const std::string& args);

// A fresh, empty temporary directory for one test.
std::filesystem::path temp_dir(const std::string& name);

}  // namespace splat::test

// Skip (with a message) when ../shared/data/<what> is absent.
#define SPLAT_REQUIRE_SHARED(rel)                                                     \
  do {                                                                                \
    if (!std::filesystem::exists(::splat::test::shared_dir() / (rel)))                \
      GTEST_SKIP() << "skipped: " << (::splat::test::shared_dir() / (rel)).string()   \
                   << " is absent (the real data lives in ../shared beside the repo)"; \
  } while (0)
