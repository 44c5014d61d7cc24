#include "test_util.h"

#include <gtest/gtest.h>

#include <bit>
#include <map>

#include "core/gaussians.h"
#include "io/demo_scene.h"

#include <array>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>

namespace splat::test {

RunResult run_splat(const std::string& args) {
  return run_command(std::string(SPLAT_BINARY) + " " + args);
}

RunResult run_command(const std::string& command) {
  RunResult r;
  const std::string cmd = command + " 2>&1";
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

const std::string& small_demo_scene() {
  static const std::string dir = [] {
    const auto d = temp_dir("small_demo_scene") / "scene";
    DemoSceneOptions o;
    o.width = o.height = 64;
    o.train_views = 24;
    o.test_views = 4;
    write_demo_scene(d.string(), o);
    return d.string();
  }();
  return dir;
}

void expect_bit_identical(const Gaussians& a, const Gaussians& b) {
  EXPECT_EQ(a.sh_degree, b.sh_degree);
  auto bits = [](const std::vector<float>& v) {
    std::vector<std::uint32_t> out;
    for (float x : v) out.push_back(std::bit_cast<std::uint32_t>(x));
    return out;
  };
  std::map<std::string, const std::vector<float>*> groups;
  b.for_each_group([&](const char* name, const std::vector<float>& v) { groups[name] = &v; });
  a.for_each_group([&](const char* name, const std::vector<float>& v) {
    EXPECT_EQ(bits(v), bits(*groups.at(name))) << name;
  });
}

}  // namespace splat::test
