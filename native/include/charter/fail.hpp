// Filling a report with its one diagnostic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "charter/report.hpp"

namespace charter::rt {

using Text = std::optional<std::string>;

// Record the diagnostic and return false, so a check can `return reject(...)`.
inline bool reject(Report& r, Code code, std::string field, std::string message, std::optional<std::uint64_t> offset,
                   Text expected = std::nullopt, Text actual = std::nullopt, std::string_view at = {}) {
  r.admitted = false;
  Diagnostic& d = r.diagnostic;
  d.code = code;
  d.field = std::move(field);
  d.message = std::move(message);
  d.has_expected = expected.has_value();
  d.expected = expected ? std::move(*expected) : std::string();
  d.has_actual = actual.has_value();
  d.actual = actual ? std::move(*actual) : std::string();
  d.location = at;
  d.has_offset = offset.has_value();
  d.offset = offset ? *offset : 0;
  return false;
}

// Python's repr() of a str, enough for messages: quotes and escapes of control characters.
inline std::string show_str(std::string_view s) {
  std::string out = "'";
  const std::size_t limit = s.size() > 80 ? 77 : s.size();
  for (std::size_t i = 0; i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (limit < s.size()) out += "...";
  return out + "'";
}

}  // namespace charter::rt
