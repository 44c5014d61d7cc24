#pragma once
// Reading whole input files: only regular files (a FIFO or /dev/zero would never end) and at most
// a size limit (a multi-gigabyte "config" is a wrong path, not a config).
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>

namespace splat {

// The first of `candidates` that is a regular file; else the first that is there as something
// else (a directory, a FIFO, a device): reading it then says what it is, where "not found" would
// mislead; else nullopt.
std::optional<std::filesystem::path> find_input(
    std::initializer_list<std::filesystem::path> candidates);
std::optional<std::filesystem::path> find_input(std::span<const std::filesystem::path> candidates);

// Throws splat::Error naming the file when `path` is not a regular file (following symlinks: a
// device, FIFO, directory or symlink loop) or is larger than max_bytes; `what` says what the file
// should have been ("config file").
void require_regular_file(const std::string& path,
                          const char* what,
                          std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// The whole content of a file that passes require_regular_file.
std::string read_input_file(const std::string& path,
                            const char* what,
                            std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// Limits for text inputs that a person or a tool writes: far above any real one.
inline constexpr std::uint64_t kMaxConfigBytes = 1ull << 20;  // a full config is ~10 KB
inline constexpr std::uint64_t kMaxJsonBytes = 1ull << 30;    // ~100 bytes per frame

}  // namespace splat
