// Mixture-of-experts routing reference kernel (oracle: charter.oracles.router).
//
// p[e] = exp(l[e] - max l) / S in float32 (exp evaluated in double and rounded to float32, as the
// oracle does, so the bits do not depend on a float32 exp implementation); S and the top-k total T
// are summed left to right. Ties are decided on the float32 probability: probability descending,
// then expert index ascending. Selection keeps a sorted list of the best `top` experts (insertion,
// O(E * k), k = 10 of 512 for Qwen4Exp), which is exactly the oracle's lexsort prefix.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels.hpp"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace charter::kernels {
namespace {

// True when expert a (probability pa) ranks before expert b (probability pb).
inline bool ranks_before(float pa, std::size_t a, float pb, std::size_t b) noexcept {
  return pa > pb || (pa == pb && a < b);
}

}  // namespace

Status router_topk(const float* logits, std::int32_t* indices, float* weights, std::size_t tokens,
                   std::size_t experts, std::size_t top) noexcept {
  if (experts == 0) {
    return {"logits must have at least one expert"};
  }
  if (top < 1 || top > experts) {
    return {"k must be in [1, experts]"};
  }
  if (experts > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    return {"experts must fit int32 indices"};
  }
  std::vector<float> p;
  std::vector<std::size_t> best;
  try {
    p.resize(experts);
    best.reserve(top);
  } catch (...) {
    return {"out of memory"};
  }
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* l = logits + t * experts;
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t e = 0; e < experts; ++e) {
      if (std::isnan(l[e])) {
        return {"logits contain NaN", static_cast<std::int64_t>(t)};
      }
      if (l[e] == std::numeric_limits<float>::infinity()) {
        return {"logits contain +inf", static_cast<std::int64_t>(t)};
      }
      if (l[e] > m) {
        m = l[e];
      }
    }
    if (!std::isfinite(m)) {
      return {"every row of logits needs a finite maximum", static_cast<std::int64_t>(t)};
    }
    float total = 0.0f;
    for (std::size_t e = 0; e < experts; ++e) {
      const float shifted = l[e] - m;
      p[e] = static_cast<float>(std::exp(static_cast<double>(shifted)));
      total = total + p[e];
    }
    for (std::size_t e = 0; e < experts; ++e) {
      p[e] = p[e] / total;
    }
    best.clear();
    for (std::size_t e = 0; e < experts; ++e) {
      if (best.size() == top && !ranks_before(p[e], e, p[best.back()], best.back())) {
        continue;
      }
      if (best.size() == top) {
        best.pop_back();
      }
      std::size_t at = best.size();
      best.push_back(e);
      while (at > 0 && ranks_before(p[e], e, p[best[at - 1]], best[at - 1])) {
        best[at] = best[at - 1];
        --at;
      }
      best[at] = e;
    }
    float chosen = 0.0f;
    for (std::size_t r = 0; r < top; ++r) {
      chosen = chosen + p[best[r]];
    }
    for (std::size_t r = 0; r < top; ++r) {
      indices[t * top + r] = static_cast<std::int32_t>(best[r]);
      weights[t * top + r] = p[best[r]] / chosen;
    }
  }
  return {};
}

}  // namespace charter::kernels
