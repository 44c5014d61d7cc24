#include "io/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"

extern char** environ;

namespace splat {
namespace {

namespace fs = std::filesystem;

// posix_spawn's view of argv: pointers into the strings, null-terminated.
std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Spawns argv with stdin from /dev/null, stderr appended to log_path and stdout either to the
// log too (stdout_fd < 0) or to stdout_fd.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path, int stdout_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  if (stdout_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  else
    posix_spawn_file_actions_adddup2(&actions, 2, 1);
  pid_t pid = 0;
  std::vector<char*> args = c_argv(argv);
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(argv[0] + ": cannot start it: " + std::strerror(rc));
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  return exit_status(status);
}

}  // namespace

std::string find_program(const std::string& name, const std::string& debian_package) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / name;
    if (access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate))
      return candidate.string();
  }
  throw Error(name + ": not found on PATH; install the Debian package " + debian_package +
              " (apt-get install " + debian_package + ", or scripts/deps.sh)");
}

std::string last_log_line(const std::string& path, bool (*keep)(std::string_view)) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 4096);
  f.seekg(from);
  std::string tail(std::size_t(size - from), '\0');
  f.read(tail.data(), std::streamsize(tail.size()));
  std::string last;
  std::size_t start = 0;
  while (start < tail.size()) {
    std::size_t end = tail.find_first_of("\r\n", start);
    if (end == std::string::npos) end = tail.size();
    const std::string_view line = std::string_view(tail).substr(start, end - start);
    if (line.find_first_not_of(" \t") != std::string_view::npos && (!keep || keep(line)))
      last = line;
    start = end + 1;
  }
  return last;
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && a.find_first_of(" '\"\\$*?;&|<>()") == std::string::npos;
    out += (out.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return out;
}

int run_logged(const std::vector<std::string>& argv,
               const std::string& log_path,
               const std::function<void()>& tick) {
  const pid_t pid = spawn(argv, log_path, -1);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return exit_status(status);
    if (done < 0 && errno != EINTR) return 1;
    if (tick) tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

int run_reading(const std::vector<std::string>& argv,
                const std::string& log_path,
                const std::function<void(std::FILE*)>& read) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(argv[0] + ": cannot create a pipe");
  pid_t pid = 0;
  try {
    pid = spawn(argv, log_path, fds[1]);
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
  }
  close(fds[1]);
  std::FILE* out = fdopen(fds[0], "rb");
  try {
    read(out);
  } catch (...) {
    kill(pid, SIGTERM);
    std::fclose(out);
    wait_for(pid);
    throw;
  }
  std::fclose(out);
  return wait_for(pid);
}

}  // namespace splat
