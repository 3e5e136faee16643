// Greedy selection over padded logits, Metal kernel: contract specs/kernels/masked-argmax.yaml.
//
// One thread per token. Only ids [0, valid_ids) are read: valid_ids is the tokenizer's id domain
// (a constant of the model's generated header), logits_rows the physical width, so no value the
// padded rows hold can win. The first maximum wins (strict >), so ties go to the lowest id. A NaN
// among the valid logits is a caller error the CPU binding reports; here it is not detected.
//
// Compile once per model (see rmsnorm.metal). Buffers: 0 logits float[tokens * logits_rows],
// 1 ids int[tokens], 2 Args.
#include "charter_metal.h"
#include CHARTER_MODEL_HEADER

namespace charter_model = charter_metal::CHARTER_MODEL;

kernel void masked_argmax(device const float* logits [[buffer(0)]], device int* ids [[buffer(1)]],
                          constant charter_model::masked_argmax::Args& args [[buffer(2)]],
                          uint token [[thread_position_in_grid]]) {
  if (token >= args.tokens) {
    return;
  }
  const ulong rows = charter_model::logits_rows;
  const uint valid = charter_model::masked_argmax::valid_ids;
  device const float* l = logits + ulong(token) * rows;
  uint best = 0;
  float best_value = l[0];
  for (uint i = 1; i < valid; ++i) {
    if (l[i] > best_value) {
      best_value = l[i];
      best = i;
    }
  }
  ids[token] = int(best);
}
