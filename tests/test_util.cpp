#include "test_util.h"

#include <array>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>

namespace splat::test {

RunResult run_splat(const std::string& args) {
  RunResult r;
  const std::string cmd = std::string(SPLAT_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::filesystem::path temp_dir(const std::string& name) {
  // ctest runs tests as parallel processes: the pid keeps their directories apart.
  auto dir = std::filesystem::temp_directory_path() /
             ("splat_test_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace splat::test
