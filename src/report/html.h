#pragma once
// Text placed into generated HTML or SVG: names and config values may contain markup characters.
#include <cstdio>
#include <string>
#include <string_view>

namespace splat {

// The entity for a character that could end an element, attribute or entity early; else null.
constexpr const char* html_entity(char c) {
  return c == '&'    ? "&amp;"
         : c == '<'  ? "&lt;"
         : c == '>'  ? "&gt;"
         : c == '"'  ? "&quot;"
         : c == '\'' ? "&#39;"
                     : nullptr;
}

inline std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (const char* entity = html_entity(c)) {
      out += entity;
    } else {
      out += c;
    }
  }
  return out;
}

// v with a fixed number of decimals, as the page shows measurements.
inline std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace splat
