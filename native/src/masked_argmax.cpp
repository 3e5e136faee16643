// Greedy selection over padded logits (oracle: charter.oracles.logits.masked_argmax).
//
// A checkpoint's output projection can have more physical rows than the tokenizer has ids
// (Qwen4Exp: 248,320 rows, 248,077 ids). Only ids [0, valid_ids) are candidates; the padded rows
// are never read, so no value they hold (1e30, +inf, NaN) can win. Ties go to the lowest id.
#include <cmath>
#include <limits>

#include "kernels.hpp"

namespace charter::kernels {

Status masked_argmax(const float* logits, std::int32_t* out, std::size_t tokens, std::size_t rows,
                     std::int64_t valid_ids) noexcept {
  if (valid_ids < 1 || static_cast<std::uint64_t>(valid_ids) > rows) {
    return {"valid_ids must be in [1, rows]"};
  }
  if (static_cast<std::uint64_t>(valid_ids) - 1 >
      static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    return {"valid_ids must fit int32 ids"};
  }
  const auto valid = static_cast<std::size_t>(valid_ids);
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* l = logits + t * rows;
    std::size_t best = 0;
    float best_value = l[0];
    for (std::size_t i = 0; i < valid; ++i) {
      const float v = l[i];
      if (std::isnan(v)) {
        return {"logits[:, :valid_ids] contains NaN", static_cast<std::int64_t>(t)};
      }
      if (v > best_value) {  // strict: the first maximum wins
        best_value = v;
        best = i;
      }
    }
    out[t] = static_cast<std::int32_t>(best);
  }
  return {};
}

}  // namespace charter::kernels
