// Reference kernels of the transformer nodes a regions contract calls (oracles:
// charter.oracles.transformer; contracts: specs/kernels/{embedding-lookup,linear,rope-norm,
// attention-causal-gqa,swiglu,residual-add}.yaml). The F1 interpreter's native mode runs every
// node of SmolLM2's graph with these (docs/regions.md, "Native kernels").
//
// Note [Reference order of the transformer kernels]: embedding lookup and the residual add are
// exact (a copy, one float32 add), as their oracles are: bit-identical. The other oracles call
// what numpy calls: BLAS sgemm for matmuls (blocked sums, fused multiply-adds) and numpy's own
// SIMD exp, sin and cos. No plain loop reproduces those bits, so these kernels take the most
// accurate order that stays a small loop: a dot product multiplies float32 pairs exactly in
// double and sums them in double, rounding once to float32, so it is the float32 rounding of the
// exact dot product to within n * 2^-53 of the sum of |terms|. Against the oracle it differs by
// the oracle's own float32 summation error, bounded by gamma_n = n * 2^-24 times the sum of
// |terms| (Higham, Accuracy and Stability, 3.1); elementwise steps (scale, max, subtract, exp,
// divide, the rotation) are the oracle's float32 operations in the oracle's order, exp, sin, cos
// and pow from <cmath>. The tolerances the tests assert are stated per kernel in docs/regions.md.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels.hpp"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace charter::kernels {
namespace {

constexpr std::size_t kLanes = 8;  // independent double accumulators: a fixed order, vectorizable

// sum_i a[i] * b[i] (float32 pairs, exact in double), summed in double in a fixed order: lane l
// takes i = l mod 8, the lanes are added left to right, then the tail.
inline double dot(const float* a, const float* b, std::size_t n) noexcept {
  double lane[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      lane[l] += static_cast<double>(a[i + l]) * static_cast<double>(b[i + l]);
    }
  }
  double total = 0.0;
  for (std::size_t l = 0; l < kLanes; ++l) {
    total += lane[l];
  }
  for (; i < n; ++i) {
    total += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  }
  return total;
}

bool all_finite(const float* x, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status embedding_lookup(const float* table, const std::int32_t* ids, float* y, std::size_t logits_rows,
                        std::size_t hidden, std::size_t tokens) noexcept {
  for (std::size_t t = 0; t < tokens; ++t) {
    if (ids[t] < 0 || static_cast<std::uint64_t>(ids[t]) >= logits_rows) {
      return {"ids must lie in [0, logits_rows)", static_cast<std::int64_t>(t)};
    }
  }
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* row = table + static_cast<std::size_t>(ids[t]) * hidden;
    float* out = y + t * hidden;
    for (std::size_t i = 0; i < hidden; ++i) {
      out[i] = row[i];
    }
  }
  return {};
}

Status linear(const float* x, const float* w, float* y, std::size_t tokens, std::size_t n_in,
              std::size_t n_out) noexcept {
  if (!all_finite(x, tokens * n_in)) {
    return {"x contains a non-finite value"};
  }
  for (std::size_t o = 0; o < n_out; ++o) {  // one weight row, reused by every token
    const float* row = w + o * n_in;
    for (std::size_t t = 0; t < tokens; ++t) {
      y[t * n_out + o] = static_cast<float>(dot(x + t * n_in, row, n_in));
    }
  }
  return {};
}

Status rope_norm(const float* x, const std::int32_t* positions, float* y, std::size_t tokens,
                 std::size_t width, std::int64_t head_dim, float theta) noexcept {
  if (head_dim < 2 || head_dim > (1 << 16) || head_dim % 2 != 0 ||
      width % static_cast<std::size_t>(head_dim) != 0) {
    return {"width is not a whole number of heads of even head_dim"};
  }
  if (!(std::isfinite(theta) && theta > 1.0f)) {
    return {"theta must be finite and > 1"};
  }
  for (std::size_t t = 0; t < tokens; ++t) {
    if (positions[t] < 0) {
      return {"positions must be >= 0", static_cast<std::int64_t>(t)};
    }
  }
  const std::size_t d = static_cast<std::size_t>(head_dim);
  const std::size_t half = d / 2;
  // The oracle's float32 steps: exponent -j * float32(2 / head_dim), inv = theta ** exponent,
  // angle = float32(position) * inv, then float32 cos and sin.
  const float step = static_cast<float>(2.0 / static_cast<double>(head_dim));
  std::vector<float> inv(half);
  for (std::size_t j = 0; j < half; ++j) {
    const float exponent = -static_cast<float>(j) * step;
    // double pow rounded to float, as the oracle (math.pow): both get the same bits on any CPU
    inv[j] = static_cast<float>(std::pow(static_cast<double>(theta), static_cast<double>(exponent)));
  }
  for (std::size_t t = 0; t < tokens; ++t) {
    const float pos = static_cast<float>(positions[t]);
    const float* xr = x + t * width;
    float* yr = y + t * width;
    for (std::size_t j = 0; j < half; ++j) {
      const float angle = pos * inv[j];
      const float c = std::cos(angle);
      const float s = std::sin(angle);
      for (std::size_t h = 0; h < width; h += d) {
        const float x0 = xr[h + 2 * j];
        const float x1 = xr[h + 2 * j + 1];
        const float a = x0 * c;
        const float b = x1 * s;
        const float e = x0 * s;
        const float f = x1 * c;
        yr[h + 2 * j] = a - b;
        yr[h + 2 * j + 1] = e + f;
      }
    }
  }
  return {};
}

Status attention_causal_gqa(const float* q, const float* k, const float* v, float* y, std::size_t tokens,
                            std::size_t q_width, std::size_t kv_width, std::int64_t heads,
                            std::int64_t kv_heads, std::int64_t head_dim) noexcept {
  if (heads < 1 || heads > (1 << 16) || kv_heads < 1 || kv_heads > heads || head_dim < 1 ||
      head_dim > (1 << 16) || heads % kv_heads != 0) {
    return {"heads must be a multiple of kv_heads, both in [1, 65536], head_dim in [1, 65536]"};
  }
  const auto d = static_cast<std::size_t>(head_dim);
  const auto group = static_cast<std::size_t>(heads / kv_heads);
  if (q_width != static_cast<std::size_t>(heads) * d || kv_width != static_cast<std::size_t>(kv_heads) * d) {
    return {"q_width and kv_width do not fit heads, kv_heads and head_dim"};
  }
  if (!all_finite(q, tokens * q_width) || !all_finite(k, tokens * kv_width) || !all_finite(v, tokens * kv_width)) {
    return {"q, k or v contains a non-finite value"};
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  std::vector<float> p(tokens);
  std::vector<double> acc(d);
  for (std::size_t h = 0; h < static_cast<std::size_t>(heads); ++h) {
    const std::size_t kv = h / group;  // query head h reads KV head h // (heads / kv_heads)
    for (std::size_t t = 0; t < tokens; ++t) {
      const float* qt = q + t * q_width + h * d;
      float top = -INFINITY;
      for (std::size_t j = 0; j <= t; ++j) {  // causal: rows 0..t only
        const float score = static_cast<float>(dot(qt, k + j * kv_width + kv * d, d));
        p[j] = score * scale;
        top = p[j] > top ? p[j] : top;
      }
      double total = 0.0;
      for (std::size_t j = 0; j <= t; ++j) {
        const float shifted = p[j] - top;
        p[j] = std::exp(shifted);
        total += static_cast<double>(p[j]);
      }
      const float sum = static_cast<float>(total);
      for (std::size_t i = 0; i < d; ++i) {
        acc[i] = 0.0;
      }
      for (std::size_t j = 0; j <= t; ++j) {
        const double weight = static_cast<double>(p[j] / sum);
        const float* vj = v + j * kv_width + kv * d;
        for (std::size_t i = 0; i < d; ++i) {
          acc[i] += weight * static_cast<double>(vj[i]);
        }
      }
      float* yt = y + t * q_width + h * d;
      for (std::size_t i = 0; i < d; ++i) {
        yt[i] = static_cast<float>(acc[i]);
      }
    }
  }
  return {};
}

Status swiglu(const float* gate, const float* up, float* y, std::size_t tokens, std::size_t ffn) noexcept {
  const std::size_t n = tokens * ffn;
  if (!all_finite(gate, n)) {
    return {"gate contains a non-finite value"};
  }
  for (std::size_t i = 0; i < n; ++i) {
    const float e = std::exp(-gate[i]);  // +inf for a large negative gate: silu is then -0
    const float denominator = 1.0f + e;
    const float silu = gate[i] / denominator;
    y[i] = silu * up[i];
  }
  return {};
}

Status residual_add(const float* a, const float* b, float* y, std::size_t tokens, std::size_t hidden) noexcept {
  const std::size_t n = tokens * hidden;
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = a[i] + b[i];
  }
  return {};
}

}  // namespace charter::kernels
