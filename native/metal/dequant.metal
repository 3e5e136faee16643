// ggml Q8_0 and Q4_1 dequantization, Metal kernels: contracts specs/kernels/dequantize-q8-0.yaml
// and dequantize-q4-1.yaml.
//
// One thread per block of 32 weights. Fields are little-endian and read byte by byte; the half
// scales are decoded from their bits with integer operations (exact), so the kernel does not
// depend on a half type. q * d and + m are separate float32 operations, as in the oracle; on
// Metal, fast-math may fuse them (the contract is exact, so build without fast-math).
//
// Compile once per model (see rmsnorm.metal). Buffers: 0 blocks uchar[nblocks * 34 or 20],
// 1 y float[nblocks * 32], 2 Args.
#include "charter_metal.h"
#include CHARTER_MODEL_HEADER

namespace charter_model = charter_metal::CHARTER_MODEL;

static inline float charter_half_bits_to_float(uint bits) {
  const uint sign = (bits >> 15) << 31;
  const uint exponent = (bits >> 10) & 0x1Fu;
  const uint mantissa = bits & 0x3FFu;
  if (exponent == 0x1Fu) {
    return as_type<float>(sign | (0xFFu << 23) | (mantissa << 13));
  }
  if (exponent == 0u) {
    const float tiny = float(mantissa) * 5.9604644775390625e-08f;  // 2^-24, exact
    return sign != 0u ? -tiny : tiny;
  }
  return as_type<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline uint charter_le_u16(device const uchar* p) {
  return uint(p[0]) | (uint(p[1]) << 8);
}

kernel void dequantize_q8_0(device const uchar* blocks [[buffer(0)]], device float* y [[buffer(1)]],
                            constant charter_model::dequantize_q8_0::Args& args [[buffer(2)]],
                            uint b [[thread_position_in_grid]]) {
  if (b >= args.nblocks) {
    return;
  }
  device const uchar* block = blocks + ulong(b) * 34;
  const float d = charter_half_bits_to_float(charter_le_u16(block));
  device float* out = y + ulong(b) * 32;
  for (uint j = 0; j < 32; ++j) {
    const int q = int(block[2 + j]) - (block[2 + j] >= 128 ? 256 : 0);  // int8, two's complement
    out[j] = float(q) * d;
  }
}

kernel void dequantize_q4_1(device const uchar* blocks [[buffer(0)]], device float* y [[buffer(1)]],
                            constant charter_model::dequantize_q4_1::Args& args [[buffer(2)]],
                            uint b [[thread_position_in_grid]]) {
  if (b >= args.nblocks) {
    return;
  }
  device const uchar* block = blocks + ulong(b) * 20;
  const float d = charter_half_bits_to_float(charter_le_u16(block));
  const float m = charter_half_bits_to_float(charter_le_u16(block + 2));
  device float* out = y + ulong(b) * 32;
  for (uint j = 0; j < 16; ++j) {
    const uint q = block[4 + j];
    const float low = float(q & 0x0Fu) * d;
    const float high = float(q >> 4) * d;
    out[j] = low + m;
    out[j + 16] = high + m;
  }
}
