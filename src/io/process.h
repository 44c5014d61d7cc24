#pragma once
// External programs (COLMAP, ffmpeg) run as child processes, their output kept in a log file.
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace splat {

// The path of `name` found on PATH. Throws splat::Error naming the Debian package that provides
// it when it is absent.
std::string find_program(const std::string& name, const std::string& debian_package);

// Runs argv (argv[0] a path) with stdin from /dev/null and stdout and stderr appended to
// log_path. While it runs, tick() is called about every quarter second (a progress display).
// Returns its exit status, or 128 + the signal that ended it.
int run_logged(const std::vector<std::string>& argv,
               const std::string& log_path,
               const std::function<void()>& tick = {});

// Runs argv with its stdout read by read(stdout_pipe) and its stderr appended to log_path;
// when read() returns or throws, the program is waited for (and ended first if read() threw).
// Returns its exit status as run_logged does.
int run_reading(const std::vector<std::string>& argv,
                const std::string& log_path,
                const std::function<void(std::FILE*)>& read);

// The last non-empty line of a log file (what a program said when it failed), or with `keep` the
// last that keep() accepts; read from the file's last 4 KiB.
std::string last_log_line(const std::string& path, bool (*keep)(std::string_view) = nullptr);

// The command line as a shell would show it, for logs and messages.
std::string command_text(const std::vector<std::string>& argv);

}  // namespace splat
