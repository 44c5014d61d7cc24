#pragma once
// The value layer of the configuration system (train/config.cpp's only include of it): the names of
// each enum, and how every value type is decoded from TOML, encoded back and range-checked.
// Internal: the public API is train/config.h.
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/suggest.h"
#include "train/config.h"

namespace splat::config_detail {

// ---- Enum names: the one string <-> value map of each enum ------------------------------------

template <class E>
struct EnumInfo {
  std::string_view what;  // how errors name the enum
  std::span<const std::pair<E, std::string_view>> names;
};

constexpr std::pair<InitKind, std::string_view> kInitKinds[] = {
    {InitKind::Auto, "auto"}, {InitKind::Random, "random"}, {InitKind::Points, "points"}};

constexpr std::pair<LrBatchScaling, std::string_view> kLrBatchScalings[] = {
    {LrBatchScaling::None, "none"},
    {LrBatchScaling::Sqrt, "sqrt"},
    {LrBatchScaling::Linear, "linear"}};

constexpr std::pair<AppearanceKind, std::string_view> kAppearanceKinds[] = {
    {AppearanceKind::None, "none"}, {AppearanceKind::Affine, "affine"}};

inline EnumInfo<ModelFormat> enum_info(ModelFormat) {
  return {"model format", kModelFormatNames};
}
inline EnumInfo<Submission> enum_info(Submission) {
  return {"submission mode", kSubmissionNames};
}
inline EnumInfo<Pipelining> enum_info(Pipelining) {
  return {"pipelining mode", kPipeliningNames};
}
inline EnumInfo<LossKind> enum_info(LossKind) {
  return {"loss", kLossKindNames};
}
inline EnumInfo<BackendKind> enum_info(BackendKind) {
  return {"backend type", kBackendKindNames};
}
inline EnumInfo<InitKind> enum_info(InitKind) {
  return {"init kind", kInitKinds};
}
inline EnumInfo<LrBatchScaling> enum_info(LrBatchScaling) {
  return {"learning-rate batch scaling", kLrBatchScalings};
}
inline EnumInfo<AppearanceKind> enum_info(AppearanceKind) {
  return {"appearance compensation", kAppearanceKinds};
}

inline EnumInfo<PrepareCamera> enum_info(PrepareCamera) {
  return {"camera model", kPrepareCameraNames};
}
inline EnumInfo<PrepareSharing> enum_info(PrepareSharing) {
  return {"camera sharing", kPrepareSharingNames};
}
inline EnumInfo<PrepareMatcher> enum_info(PrepareMatcher) {
  return {"matcher", kPrepareMatcherNames};
}

template <class E>
std::vector<std::string_view> names_of() {
  std::vector<std::string_view> out;
  for (const auto& [value, name] : enum_info(E{}).names) out.push_back(name);
  return out;
}

template <class E>
std::string valid_names() {
  return join(names_of<E>());
}

// " (did you mean \"x\"?)" for a name within a few typos of a valid one, else "".
template <class E>
std::string did_you_mean(std::string_view s) {
  const auto near = closest(s, names_of<E>());
  return near ? " (did you mean \"" + std::string(*near) + "\"?)" : "";
}

template <class E>
std::optional<E> lookup(std::string_view s) {
  for (const auto& [value, name] : enum_info(E{}).names)
    if (name == s) return value;
  return std::nullopt;
}

template <class E>
std::string_view name_of(E e) {
  return name_in(enum_info(E{}).names, e);
}

template <class E>
E parse_enum(std::string_view s) {
  if (auto e = lookup<E>(s)) return *e;
  throw Error("unknown " + std::string(enum_info(E{}).what) + " '" + std::string(s) +
              "' (valid: " + valid_names<E>() + ")" + did_you_mean<E>(s));
}

// ---- Value types: decode from TOML, encode to TOML, range checks -------------------------------

using Vec3 = std::array<double, 3>;

// Inclusive; no `hi` means unbounded above.
template <class T>
struct Range {
  T lo;
  std::optional<T> hi = std::nullopt;
};
template <class T>
struct ElemOf {
  using type = T;
};
template <>
struct ElemOf<Vec3> {
  using type = double;
};
template <class T>
using RangeOf = Range<typename ElemOf<T>::type>;

// A decoding failure; the caller adds where and which key.
struct Bad {
  std::string what;
};

inline std::string kind_of(const toml::node& n) {
  if (n.is_floating_point()) return "float";  // TOML's word; toml++ says "floating-point"
  std::ostringstream s;
  s << n.type();
  return s.str();
}

inline Bad mismatch(std::string_view expected, const toml::node& n) {
  return {"expected " + std::string(expected) + ", got " + kind_of(n)};
}

// Shortest text that parses back to the same double (std::to_chars guarantees the round trip).
inline std::string number(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// TOML needs a '.' or an exponent to read a float, not an integer; "inf"/"nan" are TOML too.
inline std::string toml_float(double v) {
  std::string s = number(v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

inline std::string quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <class T>
struct IsEnumList : std::false_type {};
template <class E>
struct IsEnumList<std::vector<E>> : std::is_enum<E> {};

template <class T>
T decode(const toml::node& n);

// An array of enum names, each at most once.
template <class L>
L decode_list(const toml::node& n) {
  using E = typename L::value_type;
  if (n.is_string()) return L{decode<E>(n)};  // one name stands for a list of one
  const auto* a = n.as_array();
  if (!a) throw mismatch("an array of strings (each one of " + valid_names<E>() + ")", n);
  L out;
  for (std::size_t i = 0; i < a->size(); ++i) {
    try {
      const E e = decode<E>(*a->get(i));
      if (std::find(out.begin(), out.end(), e) != out.end())
        throw Bad{quote(name_of(e)) + " is listed twice"};
      out.push_back(e);
    } catch (const Bad& b) {
      throw Bad{"element " + std::to_string(i) + ": " + b.what};
    }
  }
  return out;
}

template <class T>
T decode(const toml::node& n) {
  if constexpr (IsEnumList<T>::value) {
    return decode_list<T>(n);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (const auto* v = n.as_boolean()) return v->get();
    throw mismatch("a boolean", n);
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    if (const auto* v = n.as_integer()) return v->get();
    throw mismatch("an integer", n);
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    const auto* v = n.as_integer();
    if (!v) throw mismatch("an integer", n);
    if (v->get() < 0) throw Bad{"expected a non-negative integer, got " + std::to_string(v->get())};
    return static_cast<std::uint64_t>(v->get());
  } else if constexpr (std::is_same_v<T, double>) {
    // Integers are accepted for floats ("init_extent = 2"), never the other way round.
    double x;
    if (const auto* f = n.as_floating_point())
      x = f->get();
    else if (const auto* i = n.as_integer())
      x = static_cast<double>(i->get());
    else
      throw mismatch("a number", n);
    if (!std::isfinite(x)) throw Bad{"expected a finite number, got " + number(x)};
    return x;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (const auto* v = n.as_string()) return v->get();
    throw mismatch("a string", n);
  } else if constexpr (std::is_enum_v<T>) {
    const auto* v = n.as_string();
    if (!v) throw mismatch("a string (one of " + valid_names<T>() + ")", n);
    if (auto e = lookup<T>(v->get())) return *e;
    throw Bad{quote(v->get()) + " is not one of " + valid_names<T>() + did_you_mean<T>(v->get())};
  } else {
    static_assert(std::is_same_v<T, Vec3>);
    const auto* a = n.as_array();
    if (!a) throw mismatch("an array of 3 numbers", n);
    if (a->size() != 3)
      throw Bad{"expected an array of 3 numbers, got " + std::to_string(a->size()) + " element" +
                (a->size() == 1 ? "" : "s")};
    Vec3 out;
    for (std::size_t i = 0; i < 3; ++i) {
      try {
        out[i] = decode<double>(*a->get(i));
      } catch (const Bad& b) {
        throw Bad{"element " + std::to_string(i) + ": " + b.what};
      }
    }
    return out;
  }
}

template <class T>
std::string encode(const T& v) {
  if constexpr (IsEnumList<T>::value) {
    std::string out;
    for (const auto& e : v) out += (out.empty() ? "" : ", ") + quote(name_of(e));
    return "[" + out + "]";
  } else if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(v);
  else if constexpr (std::is_same_v<T, double>)
    return toml_float(v);
  else if constexpr (std::is_same_v<T, std::string>)
    return quote(v);
  else if constexpr (std::is_enum_v<T>)
    return quote(name_of(v));
  else
    return "[" + toml_float(v[0]) + ", " + toml_float(v[1]) + ", " + toml_float(v[2]) + "]";
}

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, double>)
    return number(v);
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return std::to_string(v);
  else
    return encode(v);  // ranges are numeric; this only keeps the templates total
}

template <class T>
std::string range_text(const Range<T>& r) {
  return r.hi ? "[" + show(r.lo) + ", " + show(*r.hi) + "]" : ">= " + show(r.lo);
}

// The message for a value the table does not allow, or nothing. `name` is the dotted key.
template <class T>
std::optional<std::string> problem(const std::string& name, const T& v, const Range<T>* r) {
  if constexpr (std::is_same_v<T, double>) {
    // Code can set a NaN or infinity directly; a file cannot (decode rejects them).
    if (!std::isfinite(v)) return name + " = " + number(v) + " is not a finite number";
  }
  if constexpr (std::is_arithmetic_v<T>) {
    if (r && (!(v >= r->lo) || (r->hi && v > *r->hi))) {
      if (r->hi) return name + " = " + show(v) + " is outside " + range_text(*r);
      return name + " = " + show(v) + " is below the minimum " + show(r->lo);
    }
  }
  return std::nullopt;
}

inline std::optional<std::string> problem(const std::string& name,
                                          const Vec3& v,
                                          const Range<double>* r) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (auto p = problem(name + "[" + std::to_string(i) + "]", v[i], r)) return p;
  return std::nullopt;
}

}  // namespace splat::config_detail
