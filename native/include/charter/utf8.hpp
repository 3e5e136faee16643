// UTF-8 validation with CPython's error position: the first byte of the first ill-formed
// sequence (what UnicodeDecodeError.start reports for bytes.decode("utf-8")).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "charter/hot.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CHARTER_UTF8_SIMD 1
#endif

CHARTER_HOT_BEGIN  // Note [Hot kernels at -O0] (charter/hot.hpp)
namespace charter::rt {

#ifdef CHARTER_UTF8_SIMD
namespace utf8_detail {

// Is [p, p+n) valid UTF-8? The lookup algorithm of Keiser and Lemire ("Validating UTF-8 in less
// than one instruction per byte", 2021), 16 bytes at a time. Only a yes/no: the position of an
// error comes from the scalar validator below, which runs only when this says no.
struct Simd {
  __m128i prev, error, prev_incomplete;
};

__attribute__((target("ssse3"))) inline void block(Simd& st, __m128i in) {
  constexpr char kTooShort = 1, kTooLong = 2, kOverlong3 = 4, kTooLarge = 8, kSurrogate = 16, kOverlong2 = 32,
                 kTooLarge1000 = 64, kOverlong4 = 64;
  constexpr char kTwoConts = static_cast<char>(128);
  constexpr char kCarry = static_cast<char>(kTooShort | kTooLong | kTwoConts);
  constexpr char kLarge = static_cast<char>(kCarry | kTooLarge | kTooLarge1000);
  if (_mm_movemask_epi8(in) == 0) {  // ASCII: only an incomplete sequence before it can be wrong
    st.error = _mm_or_si128(st.error, st.prev_incomplete);
    st.prev_incomplete = _mm_setzero_si128();
    st.prev = in;
    return;
  }
  const __m128i byte1_high = _mm_setr_epi8(
      kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTwoConts, kTwoConts,
      kTwoConts, kTwoConts, kTooShort | kOverlong2, kTooShort, kTooShort | kOverlong3 | kSurrogate,
      kTooShort | kTooLarge | kTooLarge1000 | kOverlong4);
  const __m128i byte1_low = _mm_setr_epi8(
      static_cast<char>(kCarry | kOverlong3 | kOverlong2 | kOverlong4), static_cast<char>(kCarry | kOverlong2), kCarry,
      kCarry, static_cast<char>(kCarry | kTooLarge), kLarge, kLarge, kLarge, kLarge, kLarge, kLarge, kLarge, kLarge,
      static_cast<char>(kLarge | kSurrogate), kLarge, kLarge);
  const __m128i byte2_high = _mm_setr_epi8(
      kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort,
      static_cast<char>(kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge1000 | kOverlong4),
      static_cast<char>(kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge),
      static_cast<char>(kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge),
      static_cast<char>(kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge), kTooShort, kTooShort, kTooShort,
      kTooShort);
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i prev1 = _mm_alignr_epi8(in, st.prev, 15);
  const __m128i sc = _mm_and_si128(
      _mm_and_si128(_mm_shuffle_epi8(byte1_high, _mm_and_si128(_mm_srli_epi16(prev1, 4), nibble)),
                    _mm_shuffle_epi8(byte1_low, _mm_and_si128(prev1, nibble))),
      _mm_shuffle_epi8(byte2_high, _mm_and_si128(_mm_srli_epi16(in, 4), nibble)));
  const __m128i prev2 = _mm_alignr_epi8(in, st.prev, 14);
  const __m128i prev3 = _mm_alignr_epi8(in, st.prev, 13);
  const __m128i must23 = _mm_or_si128(_mm_subs_epu8(prev2, _mm_set1_epi8(static_cast<char>(0xE0 - 0x80))),
                                      _mm_subs_epu8(prev3, _mm_set1_epi8(static_cast<char>(0xF0 - 0x80))));
  const __m128i must23_80 = _mm_and_si128(must23, _mm_set1_epi8(static_cast<char>(0x80)));
  st.error = _mm_or_si128(st.error, _mm_xor_si128(must23_80, sc));
  const __m128i incomplete_max = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                               static_cast<char>(0xF0 - 1), static_cast<char>(0xE0 - 1),
                                               static_cast<char>(0xC0 - 1));
  st.prev_incomplete = _mm_subs_epu8(in, incomplete_max);
  st.prev = in;
}

__attribute__((target("ssse3"))) inline bool valid_ssse3(const unsigned char* p, std::size_t n) {
  Simd st{_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) block(st, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
  if (i < n) {
    unsigned char tail[16] = {};
    std::memcpy(tail, p + i, n - i);
    block(st, _mm_loadu_si128(reinterpret_cast<const __m128i*>(tail)));
  }
  const __m128i error = _mm_or_si128(st.error, st.prev_incomplete);
  return _mm_movemask_epi8(_mm_cmpeq_epi8(error, _mm_setzero_si128())) == 0xFFFF;
}

// The same algorithm 32 bytes at a time (AVX2): the 16-entry tables are broadcast to both lanes,
// and the previous bytes cross the lane boundary through a permute.
struct Simd256 {
  __m256i prev, error, prev_incomplete;
};

__attribute__((target("avx2"))) inline void block256(Simd256& st, __m256i in) {
  constexpr char kTooShort = 1, kTooLong = 2, kOverlong3 = 4, kTooLarge = 8, kSurrogate = 16, kOverlong2 = 32,
                 kTooLarge1000 = 64, kOverlong4 = 64;
  constexpr char kTwoConts = static_cast<char>(128);
  constexpr char kCarry = static_cast<char>(kTooShort | kTooLong | kTwoConts);
  constexpr char kLarge = static_cast<char>(kCarry | kTooLarge | kTooLarge1000);
  if (_mm256_movemask_epi8(in) == 0) {
    st.error = _mm256_or_si256(st.error, st.prev_incomplete);
    st.prev_incomplete = _mm256_setzero_si256();
    st.prev = in;
    return;
  }
  const __m256i byte1_high = _mm256_broadcastsi128_si256(_mm_setr_epi8(
      kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTwoConts, kTwoConts,
      kTwoConts, kTwoConts, kTooShort | kOverlong2, kTooShort, kTooShort | kOverlong3 | kSurrogate,
      kTooShort | kTooLarge | kTooLarge1000 | kOverlong4));
  const __m256i byte1_low = _mm256_broadcastsi128_si256(_mm_setr_epi8(
      static_cast<char>(kCarry | kOverlong3 | kOverlong2 | kOverlong4), static_cast<char>(kCarry | kOverlong2), kCarry,
      kCarry, static_cast<char>(kCarry | kTooLarge), kLarge, kLarge, kLarge, kLarge, kLarge, kLarge, kLarge, kLarge,
      static_cast<char>(kLarge | kSurrogate), kLarge, kLarge));
  const __m256i byte2_high = _mm256_broadcastsi128_si256(_mm_setr_epi8(
      kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort,
      static_cast<char>(kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge1000 | kOverlong4),
      static_cast<char>(kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge),
      static_cast<char>(kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge),
      static_cast<char>(kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge), kTooShort, kTooShort, kTooShort,
      kTooShort));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i shifted = _mm256_permute2x128_si256(st.prev, in, 0x21);
  const __m256i prev1 = _mm256_alignr_epi8(in, shifted, 15);
  const __m256i sc = _mm256_and_si256(
      _mm256_and_si256(_mm256_shuffle_epi8(byte1_high, _mm256_and_si256(_mm256_srli_epi16(prev1, 4), nibble)),
                       _mm256_shuffle_epi8(byte1_low, _mm256_and_si256(prev1, nibble))),
      _mm256_shuffle_epi8(byte2_high, _mm256_and_si256(_mm256_srli_epi16(in, 4), nibble)));
  const __m256i prev2 = _mm256_alignr_epi8(in, shifted, 14);
  const __m256i prev3 = _mm256_alignr_epi8(in, shifted, 13);
  const __m256i must23 = _mm256_or_si256(_mm256_subs_epu8(prev2, _mm256_set1_epi8(static_cast<char>(0xE0 - 0x80))),
                                         _mm256_subs_epu8(prev3, _mm256_set1_epi8(static_cast<char>(0xF0 - 0x80))));
  const __m256i must23_80 = _mm256_and_si256(must23, _mm256_set1_epi8(static_cast<char>(0x80)));
  st.error = _mm256_or_si256(st.error, _mm256_xor_si256(must23_80, sc));
  const __m256i incomplete_max = _mm256_setr_epi8(
      -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
      static_cast<char>(0xF0 - 1), static_cast<char>(0xE0 - 1), static_cast<char>(0xC0 - 1));
  st.prev_incomplete = _mm256_subs_epu8(in, incomplete_max);
  st.prev = in;
}

__attribute__((target("avx2"))) inline bool valid_avx2(const unsigned char* p, std::size_t n) {
  Simd256 st{_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) block256(st, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
  if (i < n) {
    unsigned char tail[32] = {};
    std::memcpy(tail, p + i, n - i);
    block256(st, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tail)));
  }
  const __m256i error = _mm256_or_si256(st.error, st.prev_incomplete);
  return _mm256_testz_si256(error, error) != 0;
}

inline bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

inline bool have_ssse3() {
  static const bool yes = __builtin_cpu_supports("ssse3");
  return yes;
}

}  // namespace utf8_detail
#endif

// Returns the index of the first byte of the first ill-formed sequence in [p, p+n), or n if the
// bytes are valid UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
inline std::size_t utf8_error_scalar(const unsigned char* p, std::size_t n) {
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

inline std::size_t utf8_error(const unsigned char* p, std::size_t n) {
#ifdef CHARTER_UTF8_SIMD
  if (n >= 64) {
    if (utf8_detail::have_avx2() ? utf8_detail::valid_avx2(p, n)
                                 : utf8_detail::have_ssse3() && utf8_detail::valid_ssse3(p, n)) {
      return n;
    }
  }
#endif
  return utf8_error_scalar(p, n);
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
CHARTER_HOT_END
