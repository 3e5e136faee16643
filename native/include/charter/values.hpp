// The value rules of the payload stage in C++ (Note [Value rules] in charter/formats/values.py):
// the first value field of a run of blocks whose exponent bits are all ones (an infinity or a
// NaN, quiet or signalling; e8m0's 0xff), ggml's `ggml_validate_row_data` verdict. The field
// table (offsets and kinds per codec) is charter.formats.values'; the caller passes it.
//
// Integer tensors with bounds are scanned by first_out_of_bounds, below.
//
// Blocks are scanned in groups: a group is first tested without branches (the loop the compiler
// vectorizes), and only a group holding a bad value is scanned again, block by block and field by
// field in offset order, for the first one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "charter/tables.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "charter/values.hpp loads little-endian fields with memcpy: a little-endian host is required"
#endif

namespace charter::rt::values {

enum class Kind : std::uint8_t { F16, BF16, F32, F64, E8M0, IQ1M };

struct Field {
  std::uint32_t offset;  // bytes into the block
  Kind kind;
};

struct Bad {
  bool found = false;
  std::uint64_t block = 0;  // the block's index in the run (the element's, for a float tensor)
  std::uint32_t field = 0;  // its index in the field table
  std::uint64_t raw = 0;    // the value's bits (IQ1_M: the f16 scale assembled from `scales`)
};

inline std::uint32_t width(Kind k) {
  switch (k) {
    case Kind::F16: case Kind::BF16: return 2;
    case Kind::F32: return 4;
    case Kind::F64: case Kind::IQ1M: return 8;
    case Kind::E8M0: return 1;
  }
  return 0;
}

inline std::uint64_t exponent_mask(Kind k) {
  switch (k) {
    case Kind::F16: case Kind::IQ1M: return 0x7C00u;
    case Kind::BF16: return 0x7F80u;
    case Kind::F32: return 0x7F800000u;
    case Kind::F64: return 0x7FF0000000000000ull;
    case Kind::E8M0: return 0xFFu;
  }
  return 0;
}

// The value's bits, little-endian; IQ1_M's f16 scale is the top nibble of its four uint16 words.
inline std::uint64_t bits(const unsigned char* p, Kind k) {
  if (k == Kind::IQ1M) {
    std::uint64_t w[4];
    for (int i = 0; i < 4; ++i) w[i] = static_cast<std::uint64_t>(p[2 * i]) | static_cast<std::uint64_t>(p[2 * i + 1]) << 8;
    return (w[0] >> 12) | ((w[1] >> 8) & 0x00F0u) | ((w[2] >> 4) & 0x0F00u) | (w[3] & 0xF000u);
  }
  std::uint64_t v = 0;
  for (std::uint32_t i = 0; i < width(k); ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

inline bool is_bad(std::uint64_t raw, Kind k) { return (raw & exponent_mask(k)) == exponent_mask(k); }

// Whether any block of [first, last) has a bad value in field f: no branch in the loop.
inline bool any_bad(const unsigned char* data, std::uint64_t first, std::uint64_t last, std::uint32_t block_bytes,
                    const Field& f) {
  const std::uint64_t mask = exponent_mask(f.kind);
  bool bad = false;
  switch (f.kind) {
    case Kind::F16: case Kind::BF16:
      for (std::uint64_t b = first; b < last; ++b) {
        std::uint16_t v;
        std::memcpy(&v, data + b * block_bytes + f.offset, 2);
        bad |= (v & mask) == mask;
      }
      return bad;
    case Kind::F32:
      for (std::uint64_t b = first; b < last; ++b) {
        std::uint32_t v;
        std::memcpy(&v, data + b * block_bytes + f.offset, 4);
        bad |= (v & mask) == mask;
      }
      return bad;
    default:
      for (std::uint64_t b = first; b < last; ++b) bad |= is_bad(bits(data + b * block_bytes + f.offset, f.kind), f.kind);
      return bad;
  }
}

// The first bad value among the whole blocks of [data, data + size).
inline Bad first_bad(const unsigned char* data, std::uint64_t size, std::uint32_t block_bytes, Span<Field> fields) {
  Bad out;
  if (block_bytes == 0 || fields.empty()) return out;
  const std::uint64_t blocks = size / block_bytes;
  constexpr std::uint64_t kGroup = 1024;
  for (std::uint64_t first = 0; first < blocks; first += kGroup) {
    const std::uint64_t last = first + kGroup < blocks ? first + kGroup : blocks;
    bool bad = false;
    for (const Field& f : fields) bad |= any_bad(data, first, last, block_bytes, f);
    if (!bad) continue;
    for (std::uint64_t b = first; b < last; ++b) {
      for (std::uint32_t i = 0; i < fields.size; ++i) {
        const std::uint64_t raw = bits(data + b * block_bytes + fields[i].offset, fields[i].kind);
        if (is_bad(raw, fields[i].kind)) {
          out.found = true;
          out.block = b;
          out.field = i;
          out.raw = raw;
          return out;
        }
      }
    }
  }
  return out;
}

// --- bounds (Note [Value bounds] in charter/formats/values.py) -----------------------------------
// The first element of an integer tensor's run outside [lo, hi], both inclusive. T is the
// element's type (std::int8_t ... std::uint64_t); a side left open is passed as T's extreme.

template <class T>
struct OutOfBounds {
  bool found = false;
  std::uint64_t index = 0;  // the element's index in the run
  T value = 0;
};

// Whether any of the N elements at p lies outside [lo, lo + range]: v - lo, wrapped to U, is at
// most range exactly when v is in bounds, so one unsigned compare per element, accumulated in U.
// N is a constant, so GCC vectorizes the loop even at -O2 (its cheap cost model refuses loops of
// unknown trip count, and a bool accumulator in the 8-bit loop).
template <class T, std::uint64_t N>
inline bool any_out_of_bounds(const unsigned char* p, T lo, std::make_unsigned_t<T> range) {
  using U = std::make_unsigned_t<T>;
  U bad = 0;
  for (std::uint64_t i = 0; i < N; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    bad |= static_cast<U>(static_cast<U>(static_cast<U>(v) - static_cast<U>(lo)) > range);
  }
  return bad != 0;
}

// The first element of [first, last) outside [lo, hi], element by element.
template <class T>
inline OutOfBounds<T> first_out_of_bounds_in(const unsigned char* data, std::uint64_t first, std::uint64_t last,
                                             T lo, T hi) {
  OutOfBounds<T> out;
  for (std::uint64_t i = first; i < last; ++i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    if (v < lo || v > hi) {
      out.found = true;
      out.index = i;
      out.value = v;
      return out;
    }
  }
  return out;
}

template <class T>
inline OutOfBounds<T> first_out_of_bounds(const unsigned char* data, std::uint64_t size, T lo, T hi) {
  static_assert(std::is_integral_v<T>, "bounds are on integer elements");
  using U = std::make_unsigned_t<T>;
  const std::uint64_t n = size / sizeof(T);
  const U range = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
  constexpr std::uint64_t kGroup = 4096;
  std::uint64_t first = 0;
  for (; first + kGroup <= n; first += kGroup) {  // whole groups: tested without branches first
    if (any_out_of_bounds<T, kGroup>(data + first * sizeof(T), lo, range)) {
      return first_out_of_bounds_in(data, first, first + kGroup, lo, hi);
    }
  }
  return first_out_of_bounds_in(data, first, n, lo, hi);  // the last, partial group
}

}  // namespace charter::rt::values
