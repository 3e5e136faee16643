// RMSNorm Metal kernels: contracts specs/kernels/rmsnorm.yaml and rmsnorm-zero-centred.yaml.
//
// One thread per row; the sum of squares runs left to right in float32, x * inv then * w, as
// the numpy oracle does (Note [Oracle accumulation] in charter.oracles.rmsnorm). sqrt and the
// division use metal::precise, so fast-math cannot replace them with approximations. This is a
// reference kernel, not a tuned one (a threadgroup reduction would sum in another order, which the
// contract's tolerance allows).
//
// Compile once per model (docs/native.md): CHARTER_MODEL names the model's namespace and
// CHARTER_MODEL_HEADER its generated header, e.g. -DCHARTER_MODEL=qwen4exp
// -DCHARTER_MODEL_HEADER='"qwen4exp.h"' -I generated/metal -I native/metal.
// Buffers: 0 x float[rows * hidden], 1 w float[hidden], 2 y float[rows * hidden], 3 Args.
#include "charter_metal.h"
#include CHARTER_MODEL_HEADER

namespace charter_model = charter_metal::CHARTER_MODEL;

static inline void charter_rmsnorm_row(device const float* x, device const float* w, device float* y,
                                       uint row, float eps, bool zero_centred) {
  const ulong hidden = charter_model::hidden;
  device const float* xr = x + ulong(row) * hidden;
  device float* yr = y + ulong(row) * hidden;
  float total = 0.0f;
  for (ulong i = 0; i < hidden; ++i) {
    const float square = xr[i] * xr[i];
    total = total + square;
  }
  const float ms = precise::divide(total, float(hidden));
  const float inv = precise::divide(1.0f, precise::sqrt(ms + eps));
  for (ulong i = 0; i < hidden; ++i) {
    const float normalized = xr[i] * inv;
    const float scale = zero_centred ? 1.0f + w[i] : w[i];
    yr[i] = normalized * scale;
  }
}

kernel void rmsnorm(device const float* x [[buffer(0)]], device const float* w [[buffer(1)]],
                    device float* y [[buffer(2)]], constant charter_model::rmsnorm::Args& args [[buffer(3)]],
                    uint row [[thread_position_in_grid]]) {
  if (row >= args.rows) {
    return;
  }
  charter_rmsnorm_row(x, w, y, row, args.eps, false);
}

kernel void rmsnorm_zero_centred(device const float* x [[buffer(0)]], device const float* w [[buffer(1)]],
                                 device float* y [[buffer(2)]],
                                 constant charter_model::rmsnorm_zero_centred::Args& args [[buffer(3)]],
                                 uint row [[thread_position_in_grid]]) {
  if (row >= args.rows) {
    return;
  }
  charter_rmsnorm_row(x, w, y, row, args.eps, true);
}
