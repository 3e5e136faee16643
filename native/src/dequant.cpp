// ggml Q8_0 and Q4_1 dequantization (oracle: charter.oracles.dequant; upstream: gguf.quants).
//
//   block_q8_0 { half d; int8_t qs[32]; }              34 bytes, y[j] = qs[j] * d
//   block_q4_1 { half d; half m; uint8_t qs[16]; }     20 bytes, y[j] = (qs[j] & 15) * d + m,
//                                                                y[j + 16] = (qs[j] >> 4) * d + m
// Fields are little-endian and read byte by byte, so neither the host's endianness nor the
// blocks' alignment matters. q * d is one float32 rounding and + m another (no fused multiply-add:
// Note [Bit-exact reference]).
#include <cstring>

#include "kernels.hpp"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace charter::kernels {
namespace {

constexpr std::size_t kQK = 32;
constexpr std::size_t kQ8_0Bytes = 2 + kQK;
constexpr std::size_t kQ4_1Bytes = 2 + 2 + kQK / 2;

inline std::uint16_t le_u16(const std::uint8_t* p) noexcept {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

inline float bits_to_float(std::uint32_t bits) noexcept {
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

}  // namespace

float half_to_float(std::uint16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits >> 15) << 31;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) {  // inf and NaN, payload kept
    return bits_to_float(sign | (0xFFu << 23) | (mantissa << 13));
  }
  if (exponent == 0) {  // zero and subnormals: mantissa * 2^-24, exact in float32
    const float tiny = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
    return sign ? -tiny : tiny;
  }
  return bits_to_float(sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13));
}

Status dequantize_q8_0(const std::uint8_t* blocks, float* y, std::size_t nblocks) noexcept {
  for (std::size_t b = 0; b < nblocks; ++b) {
    const std::uint8_t* block = blocks + b * kQ8_0Bytes;
    const float d = half_to_float(le_u16(block));
    float* out = y + b * kQK;
    for (std::size_t j = 0; j < kQK; ++j) {
      const auto q = static_cast<std::int8_t>(block[2 + j]);
      out[j] = static_cast<float>(q) * d;
    }
  }
  return {};
}

Status dequantize_q4_1(const std::uint8_t* blocks, float* y, std::size_t nblocks) noexcept {
  for (std::size_t b = 0; b < nblocks; ++b) {
    const std::uint8_t* block = blocks + b * kQ4_1Bytes;
    const float d = half_to_float(le_u16(block));
    const float m = half_to_float(le_u16(block + 2));
    float* out = y + b * kQK;
    for (std::size_t j = 0; j < kQK / 2; ++j) {
      const std::uint8_t q = block[4 + j];
      const float low = static_cast<float>(q & 0x0F) * d;
      const float high = static_cast<float>(q >> 4) * d;
      out[j] = low + m;
      out[j + kQK / 2] = high + m;
    }
  }
  return {};
}

}  // namespace charter::kernels
