// UTF-8 validation with CPython's error position: the first byte of the first ill-formed
// sequence (what UnicodeDecodeError.start reports for bytes.decode("utf-8")).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace charter::rt {

// Returns the index of the first byte of the first ill-formed sequence in [p, p+n), or n if the
// bytes are valid UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
inline std::size_t utf8_error(const unsigned char* p, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if (i + k >= n || (p[i + k] & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return n;
}

// Decode one code point of valid UTF-8 at p[i], advancing i (also accepts the 3-byte encoding
// of surrogates that charter's JSON reader uses for lone \uD800-style escapes).
inline std::uint32_t utf8_next(const unsigned char* p, std::size_t n, std::size_t& i) {
  const unsigned char c = p[i];
  if (c < 0x80 || i + 1 >= n) {
    ++i;
    return c;
  }
  if (c < 0xE0) {
    std::uint32_t v = (static_cast<std::uint32_t>(c & 0x1F) << 6) | (p[i + 1] & 0x3F);
    i += 2;
    return v;
  }
  if (c < 0xF0 && i + 2 < n) {
    std::uint32_t v = (static_cast<std::uint32_t>(c & 0x0F) << 12) |
                      (static_cast<std::uint32_t>(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
    i += 3;
    return v;
  }
  if (i + 3 < n) {
    std::uint32_t v = (static_cast<std::uint32_t>(c & 0x07) << 18) |
                      (static_cast<std::uint32_t>(p[i + 1] & 0x3F) << 12) |
                      (static_cast<std::uint32_t>(p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F);
    i += 4;
    return v;
  }
  ++i;
  return c;
}

}  // namespace charter::rt
