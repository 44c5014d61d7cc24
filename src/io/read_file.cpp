#include "io/read_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace splat {

namespace fs = std::filesystem;

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
        std::string("not a regular file (") +
            (st.type() == fs::file_type::directory ? "a directory" : "a device, FIFO or socket") +
            "), so it cannot be a " + what);
  const std::uint64_t size = fs::file_size(path, ec);
  if (ec) throw input_error(path, "file", "cannot stat: " + ec.message());
  if (size > max_bytes)
    throw input_error(path, "file",
                      std::to_string(size) + " bytes is more than a " + what + " can be (" +
                          std::to_string(max_bytes) + " bytes at most)");
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
