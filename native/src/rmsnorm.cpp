// RMSNorm reference kernels (oracle: charter.oracles.rmsnorm; Note [Bit-exact reference]).
#include <cmath>

#include "kernels.hpp"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace charter::kernels {
namespace {

enum class Scale { Weight, OnePlusWeight };

template <Scale kScale>
Status rmsnorm_rows(const float* x, const float* w, float* y, std::size_t rows, std::size_t hidden,
                    float eps) noexcept {
  if (!(std::isfinite(eps) && eps > 0.0f)) {
    return {"eps must be finite and > 0"};
  }
  if (hidden == 0) {
    return {"hidden must be > 0"};
  }
  const float n = static_cast<float>(hidden);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * hidden;
    float* yr = y + r * hidden;
    float total = 0.0f;
    for (std::size_t i = 0; i < hidden; ++i) {
      const float square = xr[i] * xr[i];
      total = total + square;  // left to right, float32 (Note [Oracle accumulation])
    }
    const float ms = total / n;
    const float inv = 1.0f / std::sqrt(ms + eps);
    for (std::size_t i = 0; i < hidden; ++i) {
      const float normalized = xr[i] * inv;
      if constexpr (kScale == Scale::Weight) {
        yr[i] = normalized * w[i];
      } else {
        const float scale = 1.0f + w[i];
        yr[i] = normalized * scale;
      }
    }
  }
  return {};
}

}  // namespace

Status rmsnorm(const float* x, const float* w, float* y, std::size_t rows, std::size_t hidden,
               float eps) noexcept {
  return rmsnorm_rows<Scale::Weight>(x, w, y, rows, hidden, eps);
}

Status rmsnorm_zero_centred(const float* x, const float* w, float* y, std::size_t rows,
                            std::size_t hidden, float eps) noexcept {
  return rmsnorm_rows<Scale::OnePlusWeight>(x, w, y, rows, hidden, eps);
}

}  // namespace charter::kernels
