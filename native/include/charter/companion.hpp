// A companion file: the JSON a contract's `config` binds beside the artifact (Hugging Face's
// config.json), checked at the metadata stage as charter.admission.runtime.Context.config does.
//
// A checker never opens files: the caller reads the companion and passes its bytes (or why it
// could not read them) in Options. The text is decoded as Python's bytes.decode("utf-8") and
// json.loads do, with the same refusals (duplicate keys, NaN and Infinity, 4,300-digit integers,
// a leading byte order mark); the values are compared with Python's semantics.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include "charter/json.hpp"
#include "charter/tables.hpp"
#include "charter/utf8.hpp"

namespace charter::rt {

inline constexpr std::uint64_t kMaxCompanionBytes = std::uint64_t{1} << 24;  // MAX_COMPANION_BYTES

struct Companion {
  bool read = false;                   // the caller read the file: [data, data + size)
  const unsigned char* data = nullptr;
  std::uint64_t size = 0;              // a caller may stop reading at kMaxCompanionBytes + 1
  std::string_view error{};            // why it could not be read (strerror), when !read
};

namespace companion {

// _json_type in charter/admission/runtime.py.
inline std::string_view type_name(json::Kind k) {
  switch (k) {
    case json::Kind::True: case json::Kind::False: return "bool";
    case json::Kind::Int: return "int64";
    case json::Kind::Float: return "float64";
    case json::Kind::Str: return "string";
    case json::Kind::Null: return "null";
    case json::Kind::Arr: return "list";
    case json::Kind::Obj: return "dict";
  }
  return "object";
}

// float(text) of a JSON number, correctly rounded; out of range is +-inf or +-0.0 as in Python.
inline double to_double(std::string_view text) {
  double d = 0.0;
  if (std::from_chars(text.data(), text.data() + text.size(), d).ec != std::errc::result_out_of_range) return d;
  // Out of range: the value is m * 10^e with 1 <= m < 10; it overflowed if e >= 0, else underflowed.
  const bool neg = !text.empty() && text[0] == '-';
  long long before_point = 0, first_significant = -1, digits = 0;
  bool after_point = false;
  std::size_t i = neg ? 1 : 0;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.') {
      after_point = true;
      continue;
    }
    if (first_significant < 0 && text[i] != '0') first_significant = digits;
    ++digits;
    if (!after_point) ++before_point;
  }
  long long exponent = 0;
  if (i < text.size()) {
    exponent = std::strtoll(std::string(text.substr(i + 1)).c_str(), nullptr, 10);
    exponent = std::max(-(1LL << 40), std::min(exponent, 1LL << 40));  // saturated; the sign decides
  }
  const bool overflow = first_significant >= 0 && before_point - 1 - first_significant + exponent >= 0;
  const double magnitude = overflow ? __builtin_inf() : 0.0;
  return neg ? -magnitude : magnitude;
}

// `node == expected` in Python, for a JSON value whose type already matches the contract's.
inline bool py_equal(const json::Node& node, const Lit& expected) {
  auto as_int = [&](const Int& actual) {
    switch (expected.kind) {
      case Lit::Kind::Int: return actual == expected.i;
      case Lit::Kind::Bool: return actual == Int(expected.b ? 1u : 0u);
      case Lit::Kind::Float: {
        const double f = expected.f;
        if (actual.huge || !(f == f) || f != __builtin_trunc(f) || f >= 18446744073709551616.0 ||
            f <= -18446744073709551616.0) {
          return false;
        }
        const bool neg = f < 0;
        const std::uint64_t mag = static_cast<std::uint64_t>(neg ? -f : f);
        return actual == (neg ? Int::negative(mag) : Int(mag));
      }
      case Lit::Kind::Str: return false;
    }
    return false;
  };
  switch (node.kind) {
    case json::Kind::True: return as_int(Int(1u));
    case json::Kind::False: return as_int(Int(0u));
    case json::Kind::Int: return as_int(node.num());
    case json::Kind::Str: return expected.kind == Lit::Kind::Str && node.s == expected.s;
    default: return false;  // float64 compares bits; null, list and dict are never contract values
  }
}

}  // namespace companion
}  // namespace charter::rt
