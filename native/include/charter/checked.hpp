// Checked arithmetic and little-endian loads for the admission runtime.
//
// Every number read from an artifact is untrusted: sums and products go through the compiler's
// __builtin_*_overflow, and an overflow is reported as "does not fit", never wrapped.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "charter/hot.hpp"

namespace charter::rt {

[[nodiscard]] inline bool add_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

[[nodiscard]] inline bool mul_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

// a + b, saturated at UINT64_MAX: for "does pos + n pass the end" tests, where any overflow
// certainly passes every end a file can have.
[[nodiscard]] inline std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out;
  return __builtin_add_overflow(a, b, &out) ? UINT64_MAX : out;
}

CHARTER_HOT_BEGIN  // Note [Hot kernels at -O0] (charter/hot.hpp)
inline std::uint32_t load_u32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

inline std::uint64_t load_u64(const unsigned char* p) {
  return static_cast<std::uint64_t>(load_u32(p)) | static_cast<std::uint64_t>(load_u32(p + 4)) << 32;
}
CHARTER_HOT_END

// An integer as Python holds it: any sign and size. Values in [-(2^64-1), 2^64-1] are exact;
// larger ones keep their decimal digits (JSON) so `%` and printing still work.
struct Int {
  bool neg = false;
  bool huge = false;       // |value| >= 2^64; `digits` holds the decimal magnitude when known
  std::uint64_t mag = 0;   // |value| when !huge
  std::string_view digits{};

  constexpr Int() = default;
  constexpr Int(unsigned long long v) : mag(v) {}  // NOLINT: literals of generated tables
  static constexpr Int negative(unsigned long long m) {
    Int i(m);
    i.neg = m != 0;
    return i;
  }
  static constexpr Int out_of_range(bool negative_) {
    Int i;
    i.neg = negative_;
    i.huge = true;
    return i;
  }

  friend bool operator==(const Int& a, const Int& b) {
    if (a.huge || b.huge) {
      if (!(a.huge && b.huge) || a.neg != b.neg) return false;
      return !a.digits.empty() && a.digits == b.digits;
    }
    return a.neg == b.neg && a.mag == b.mag;
  }
  friend bool operator!=(const Int& a, const Int& b) { return !(a == b); }

  bool is_u64() const { return !neg && !huge; }

  // this % m for m > 0, as Python's non-negative remainder.
  std::uint64_t mod(std::uint64_t m) const {
    std::uint64_t r = 0;
    if (huge) {
      for (char c : digits) {
        unsigned __int128 t = static_cast<unsigned __int128>(r) * 10u + static_cast<unsigned>(c - '0');
        r = static_cast<std::uint64_t>(t % m);
      }
    } else {
      r = mag % m;
    }
    return (neg && r != 0) ? m - r : r;
  }

  std::string str() const {
    std::string body = huge ? (digits.empty() ? std::string("<out of range>") : std::string(digits))
                            : std::to_string(mag);
    return neg ? "-" + body : body;
  }
};

inline std::string u64s(std::uint64_t v) { return std::to_string(v); }

}  // namespace charter::rt
