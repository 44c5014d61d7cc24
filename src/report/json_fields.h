#pragma once
// Reading metrics records that may lack fields: a missing field, or one of the wrong type, is
// absent rather than an error, so an old or partial record still makes a page.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace splat {

inline const nlohmann::json* json_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

inline std::optional<double> json_number(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = json_field(j, key);
  if (!f || !f->is_number()) return std::nullopt;
  return f->get<double>();
}

inline std::optional<std::string> json_string(const nlohmann::json& j, const char* key) {
  const nlohmann::json* f = json_field(j, key);
  if (!f || !f->is_string()) return std::nullopt;
  return f->get<std::string>();
}

// metrics.json states PSNR and SSIM as 0 when there were no test views: they measured nothing.
inline bool has_test_quality(const nlohmann::json& metrics) {
  const nlohmann::json* views = json_field(metrics, "test_views");
  return !(views && views->is_array() && views->empty());
}

}  // namespace splat
