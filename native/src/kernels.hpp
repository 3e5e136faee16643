// charter's C++17 reference kernels: pointers and sizes in, a Status out, no Python.
//
// Each kernel is the native twin of a numpy oracle (src/charter/oracles/) and of a kernel contract
// (specs/kernels/*.yaml) whose generated nanobind binding (generated/bindings/<kernel>.cpp) checks
// dtype, shape, contiguity and aliasing before it calls here. The kernels therefore trust their
// pointers and sizes; they check only the domain facts a shape cannot express (eps > 0, k <= E,
// no NaN where the oracle refuses NaN) and report them through Status, never by throwing.
//
// Note [Kernel signature]: a kernel's parameters are, in order, the contract's input pointers, its
// output pointers, every distinct name used in a shape (first appearance, inputs before outputs),
// then its attributes, except an attribute whose fixed value is exactly one of those shape names
// (it is the same number: router_topk's k is experts_per_token). The generated binding calls the
// kernel in that order, so a header that disagrees with its contract fails to compile.
//
// Note [Bit-exact reference]: every float operation is a float32 operation in the oracle's order
// (sums left to right, x * inv then * w, q * d then + m). Fused multiply-add would change the
// bits, so kernels.cmake compiles these sources with -ffp-contract=off, and no kernel is built
// with fast-math. The contracts' tolerances allow other orders (SIMD, Metal); the reference
// kernels are tested to be bit-identical to the oracles as well, except the four transformer
// kernels whose oracle calls BLAS or numpy's SIMD exp, sin and cos (linear, rope_norm,
// attention_causal_gqa, swiglu: Note [Reference order of the transformer kernels] in
// transformer.cpp), which are tested against their contract tolerance.
#pragma once

#include <cstddef>
#include <cstdint>

namespace charter::kernels {

// The outcome of a kernel call: `error` is null on success, else a static message; `row` is the
// row it concerns, or -1. On error the outputs hold unspecified values.
struct Status {
  const char* error = nullptr;
  std::int64_t row = -1;

  constexpr bool ok() const noexcept { return error == nullptr; }
};

// y[r, :] = (x[r, :] * inv_r) * w, inv_r = 1 / sqrt(sum_i x[r, i]^2 / hidden + eps).
// eps must be finite and > 0; hidden > 0.
Status rmsnorm(const float* x, const float* w, float* y, std::size_t rows, std::size_t hidden,
               float eps) noexcept;

// As rmsnorm, with the applied scale 1 + w (the zero-centred weight convention).
Status rmsnorm_zero_centred(const float* x, const float* w, float* y, std::size_t rows,
                            std::size_t hidden, float eps) noexcept;

// Per token: float32 softmax over `experts` logits, the k = `top` most probable experts ranked by
// probability descending then expert index ascending, weights renormalized over those k, in rank
// order. 1 <= top <= experts; logits must hold no NaN or +inf and each row a finite maximum.
Status router_topk(const float* logits, std::int32_t* indices, float* weights, std::size_t tokens,
                   std::size_t experts, std::size_t top) noexcept;

// Per token: the first index of the maximum of logits[t, 0:valid_ids]; rows >= valid_ids are
// never read. 1 <= valid_ids <= rows <= INT32_MAX + 1; the valid part must hold no NaN.
Status masked_argmax(const float* logits, std::int32_t* out, std::size_t tokens, std::size_t rows,
                     std::int64_t valid_ids) noexcept;

// ggml Q8_0: blocks of 34 bytes {half d; int8 qs[32]} -> 32 floats qs[j] * d each.
Status dequantize_q8_0(const std::uint8_t* blocks, float* y, std::size_t nblocks) noexcept;

// ggml Q4_1: blocks of 20 bytes {half d; half m; uint8 qs[16]} -> 32 floats: element j < 16 is
// (qs[j] & 15) * d + m, element j + 16 is (qs[j] >> 4) * d + m.
Status dequantize_q4_1(const std::uint8_t* blocks, float* y, std::size_t nblocks) noexcept;

// The transformer nodes of a regions graph (native/src/transformer.cpp; Note [Reference order of
// the transformer kernels] there: embedding_lookup and residual_add are bit-identical to their
// oracles, the others sum dot products in double and agree within the stated tolerances).

// y[t, :] = table[ids[t], :]; every id in [0, logits_rows), else an error naming the token.
Status embedding_lookup(const float* table, const std::int32_t* ids, float* y, std::size_t logits_rows,
                        std::size_t hidden, std::size_t tokens) noexcept;

// y[t, o] = sum_i x[t, i] * w[o, i]; x must be finite.
Status linear(const float* x, const float* w, float* y, std::size_t tokens, std::size_t n_in,
              std::size_t n_out) noexcept;

// Every head's adjacent pairs (2j, 2j+1) rotated by positions[t] * theta^(-2j / head_dim)
// (llama.cpp's LLAMA_ROPE_TYPE_NORM); width a multiple of the even head_dim, positions >= 0.
Status rope_norm(const float* x, const std::int32_t* positions, float* y, std::size_t tokens,
                 std::size_t width, std::int64_t head_dim, float theta) noexcept;

// Causal softmax attention over rows 0..t, query head h reading KV head h / (heads / kv_heads),
// scale 1 / sqrt(head_dim); q, k and v finite.
Status attention_causal_gqa(const float* q, const float* k, const float* v, float* y, std::size_t tokens,
                            std::size_t q_width, std::size_t kv_width, std::int64_t heads,
                            std::int64_t kv_heads, std::int64_t head_dim) noexcept;

// y = gate / (1 + exp(-gate)) * up, elementwise float32; gate finite.
Status swiglu(const float* gate, const float* up, float* y, std::size_t tokens, std::size_t ffn) noexcept;

// y = a + b, elementwise float32.
Status residual_add(const float* a, const float* b, float* y, std::size_t tokens, std::size_t hidden) noexcept;

// IEEE binary16 bits -> float32, exactly (every half is a float32); NaN payloads kept.
float half_to_float(std::uint16_t bits) noexcept;

}  // namespace charter::kernels
