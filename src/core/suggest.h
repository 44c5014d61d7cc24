#pragma once
// "Did you mean ...?" for names the user mistyped (config keys, sections, enum values).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace splat {

// Optimal-string-alignment distance: a swap of two letters ("trian") counts as one typo.
std::size_t typo_distance(std::string_view a, std::string_view b);
// The name within about a third of the word's length in typos, if any.
std::optional<std::string_view> closest(std::string_view word,
                                        const std::vector<std::string_view>& names);
// "a, b, c".
std::string join(const std::vector<std::string_view>& names);

}  // namespace splat
