#include "io/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace splat {

namespace fs = std::filesystem;

namespace {
const char* kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
    case fs::file_type::block:
      return "a device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "of an unknown kind";
  }
}
// "a model", "an image".
std::string a(const char* what) {
  return (std::strchr("aeiou", what[0]) ? "an " : "a ") + std::string(what);
}
}  // namespace

std::optional<fs::path> find_input(std::initializer_list<fs::path> candidates) {
  return find_input(std::span<const fs::path>(candidates.begin(), candidates.size()));
}

std::optional<fs::path> find_input(std::span<const fs::path> candidates) {
  std::error_code ec;
  for (const fs::path& p : candidates)
    if (fs::is_regular_file(p, ec)) return p;
  for (const fs::path& p : candidates)
    if (fs::exists(fs::symlink_status(p, ec))) return p;
  return std::nullopt;
}

void require_regular_file(const std::string& path, const char* what, std::uint64_t max_bytes) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && st.type() != fs::file_type::not_found)
    throw input_error(path, "file", std::string("cannot read the ") + what + ": " + ec.message());
  if (st.type() == fs::file_type::not_found)
    throw input_error(path, "file", std::string("cannot open: no such ") + what);
  if (st.type() != fs::file_type::regular)
    throw input_error(
        path, "file",
        std::string("not a regular file (") + kind_of(st.type()) + "), so it cannot be " + a(what));
  const std::uint64_t size = fs::file_size(path, ec);
  if (ec) throw input_error(path, "file", "cannot stat: " + ec.message());
  if (size > max_bytes)
    throw input_error(path, "file",
                      std::to_string(size) + " bytes is more than " + a(what) + " can be (" +
                          std::to_string(max_bytes) + " bytes at most)");
  // Found now, where the message can say so, not as a failed read further on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw input_error(path, "file",
                      std::string("cannot open the ") + what + ": " + std::strerror(errno));
  ::close(fd);
}

std::string read_input_file(const std::string& path, const char* what, std::uint64_t max_bytes) {
  require_regular_file(path, what, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "file", std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw input_error(path, "file", "read failed");
  return ss.str();
}

}  // namespace splat
