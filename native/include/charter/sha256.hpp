// SHA-256 (FIPS 180-4) for digests of metadata arrays and strings: a portable implementation and,
// on x86-64 CPUs with the SHA extensions, the SHA-NI instruction path (chosen at run time).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "charter/hot.hpp"
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CHARTER_SHA_NI 1
#endif

CHARTER_HOT_BEGIN  // Note [Hot kernels at -O0] (charter/hot.hpp)
namespace charter::rt {

namespace sha256_detail {

inline constexpr std::uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

inline void blocks_portable(std::uint32_t* h, const unsigned char* p, std::size_t nblocks) {
  for (; nblocks; --nblocks, p += 64) {
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = static_cast<std::uint32_t>(p[4 * i]) << 24 | static_cast<std::uint32_t>(p[4 * i + 1]) << 16 |
             static_cast<std::uint32_t>(p[4 * i + 2]) << 8 | p[4 * i + 3];
    }
    for (int i = 16; i < 64; ++i) {
      std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      std::uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      std::uint32_t ch = (e & f) ^ (~e & g);
      std::uint32_t t1 = hh + S1 + ch + kK[i] + w[i];
      std::uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      std::uint32_t t2 = S0 + maj;
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
}

#ifdef CHARTER_SHA_NI
// Round constants i..i+3 (a function, not a lambda: a lambda has no target attribute of its own,
// and at -O0 (Note [Hot kernels at -O0]) it was called, not inlined, four times a round).
__attribute__((target("sha,sse4.1"))) inline __m128i round_constants(int i) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + i));
}

// The SHA-NI round structure of Intel's reference code (public domain sha256-x86 by J. Walton).
__attribute__((target("sha,sse4.1"))) inline void blocks_shani(std::uint32_t* h, const unsigned char* p,
                                                               std::size_t nblocks) {
  const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
  __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));
  tmp = _mm_shuffle_epi32(tmp, 0xB1);          // CDAB
  state1 = _mm_shuffle_epi32(state1, 0x1B);    // EFGH
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);  // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);       // CDGH
  for (; nblocks; --nblocks, p += 64) {
    const __m128i abef_save = state0, cdgh_save = state1;
    __m128i msg, msg0, msg1, msg2, msg3;
    msg0 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 0)), mask);
    msg = _mm_add_epi32(msg0, round_constants(0));
    state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
    state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
    msg1 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)), mask);
    msg = _mm_add_epi32(msg1, round_constants(4));
    state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
    state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
    msg0 = _mm_sha256msg1_epu32(msg0, msg1);
    msg2 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32)), mask);
    msg = _mm_add_epi32(msg2, round_constants(8));
    state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
    state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
    msg1 = _mm_sha256msg1_epu32(msg1, msg2);
    msg3 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 48)), mask);
    // Rounds 12..63, unrolled: the message schedule rotates through msg0..msg3.
    __m128i tmp2;
#define CHARTER_SHA_QROUND_(r, cur, prev, next, sched2, sched1)                    \
  msg = _mm_add_epi32(cur, round_constants(4 * (r)));                              \
  state1 = _mm_sha256rnds2_epu32(state1, state0, msg);                             \
  if (sched2) {                                                                    \
    tmp2 = _mm_alignr_epi8(cur, prev, 4);                                          \
    next = _mm_sha256msg2_epu32(_mm_add_epi32(next, tmp2), cur);                   \
  }                                                                                \
  state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));    \
  if (sched1) prev = _mm_sha256msg1_epu32(prev, cur);
    CHARTER_SHA_QROUND_(3, msg3, msg2, msg0, true, true)
    CHARTER_SHA_QROUND_(4, msg0, msg3, msg1, true, true)
    CHARTER_SHA_QROUND_(5, msg1, msg0, msg2, true, true)
    CHARTER_SHA_QROUND_(6, msg2, msg1, msg3, true, true)
    CHARTER_SHA_QROUND_(7, msg3, msg2, msg0, true, true)
    CHARTER_SHA_QROUND_(8, msg0, msg3, msg1, true, true)
    CHARTER_SHA_QROUND_(9, msg1, msg0, msg2, true, true)
    CHARTER_SHA_QROUND_(10, msg2, msg1, msg3, true, true)
    CHARTER_SHA_QROUND_(11, msg3, msg2, msg0, true, true)
    CHARTER_SHA_QROUND_(12, msg0, msg3, msg1, true, true)
    CHARTER_SHA_QROUND_(13, msg1, msg0, msg2, true, true)
    CHARTER_SHA_QROUND_(14, msg2, msg1, msg3, true, false)
    CHARTER_SHA_QROUND_(15, msg3, msg2, msg0, false, false)
#undef CHARTER_SHA_QROUND_
    state0 = _mm_add_epi32(state0, abef_save);
    state1 = _mm_add_epi32(state1, cdgh_save);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);       // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);    // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0); // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);    // ABEF
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), state1);
}

inline bool have_shani() {
  static const bool yes = __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1");
  return yes;
}
#endif

inline void blocks(std::uint32_t* h, const unsigned char* p, std::size_t nblocks) {
#ifdef CHARTER_SHA_NI
  if (have_shani()) {
    blocks_shani(h, p, nblocks);
    return;
  }
#endif
  blocks_portable(h, p, nblocks);
}

}  // namespace sha256_detail

// Incremental SHA-256; `hex()` finishes it.
class Sha256 {
 public:
  void update(const unsigned char* p, std::size_t n) {
    total_ += n;
    if (fill_) {
      std::size_t take = 64 - fill_ < n ? 64 - fill_ : n;
      std::memcpy(buf_ + fill_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ == 64) {
        sha256_detail::blocks(h_, buf_, 1);
        fill_ = 0;
      }
    }
    if (n >= 64) {
      sha256_detail::blocks(h_, p, n / 64);
      p += n / 64 * 64;
      n %= 64;
    }
    if (n) {
      std::memcpy(buf_, p, n);
      fill_ = n;
    }
  }

  std::array<unsigned char, 32> digest() {
    const std::uint64_t bits = total_ * 8;
    const unsigned char one = 0x80;
    const unsigned char zeros[64] = {};
    update(&one, 1);
    update(zeros, (fill_ <= 56 ? 56 - fill_ : 120 - fill_));
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(len, 8);
    std::array<unsigned char, 32> out{};
    for (int i = 0; i < 8; ++i) {
      for (int k = 0; k < 4; ++k) out[4 * i + k] = static_cast<unsigned char>(h_[i] >> (24 - 8 * k));
    }
    return out;
  }

  std::string hex() {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto d = digest();
    std::string s(64, '0');
    for (int i = 0; i < 32; ++i) {
      s[2 * i] = kHex[d[i] >> 4];
      s[2 * i + 1] = kHex[d[i] & 15];
    }
    return s;
  }

 private:
  std::uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char buf_[64] = {};
  std::size_t fill_ = 0;
  std::uint64_t total_ = 0;
};

inline std::string sha256_hex(const unsigned char* p, std::size_t n) {
  Sha256 s;
  s.update(p, n);
  return s.hex();
}

}  // namespace charter::rt
CHARTER_HOT_END
