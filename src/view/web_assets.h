#pragma once
// The viewer's page (web/*), compiled into the binary by cmake/embed_web.cmake.
#include <string_view>
#include <vector>

namespace splat::view {

struct WebAsset {
  std::string_view path;  // URL path, e.g. "/viewer.js"
  std::string_view mime;
  std::string_view content;
};

const std::vector<WebAsset>& web_assets();

}  // namespace splat::view
