#pragma once
// Errors that reach the user: every message names the file and the field (or record) at fault.
#include <stdexcept>
#include <string>

namespace splat {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "FILE: FIELD: what" -- the one format for input errors.
inline Error input_error(const std::string& file,
                         const std::string& field,
                         const std::string& what) {
  return Error(file + ": " + field + ": " + what);
}

}  // namespace splat
