// The result of one admission: at most one diagnostic, as in charter.admission.report.
//
// No exception crosses the checker boundary: a check returns false after filling the report.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace charter::rt {

// Stages of Note [Ordered admission] (charter/admission/runtime.py), in the order they run.
namespace stage {
inline constexpr std::string_view kContainer = "container";
inline constexpr std::string_view kIdentity = "identity";
inline constexpr std::string_view kMetadata = "metadata";
inline constexpr std::string_view kTokenizer = "tokenizer";
inline constexpr std::string_view kTensors = "tensors";
inline constexpr std::string_view kCodec = "codec";
inline constexpr std::string_view kLayout = "layout";
inline constexpr std::string_view kStores = "stores";
inline constexpr std::string_view kPolicy = "policy";
inline constexpr std::string_view kPayload = "payload";
}  // namespace stage

// Diagnostic codes (charter.diagnostics.Code; documented in docs/diagnostics.md).
enum class Code : std::uint8_t {
  CONTAINER_UNREADABLE, CONTAINER_MAGIC, CONTAINER_VERSION, CONTAINER_TRUNCATED, CONTAINER_COUNT,
  CONTAINER_STRING, CONTAINER_VALUE_TYPE, CONTAINER_BOOL, CONTAINER_ARRAY, CONTAINER_KEY,
  CONTAINER_DUPLICATE_KEY, CONTAINER_ALIGNMENT, CONTAINER_TENSOR_NAME, CONTAINER_TENSOR_RANK,
  CONTAINER_TENSOR_DIM, CONTAINER_TENSOR_TYPE, CONTAINER_TENSOR_BLOCK, CONTAINER_OVERFLOW,
  CONTAINER_OFFSET, CONTAINER_EXTENT, CONTAINER_HEADER, CONTAINER_JSON, CONTAINER_DTYPE,
  CONTAINER_METADATA, CONTAINER_FORMAT,
  IDENTITY_ARCHITECTURE, IDENTITY_MISSING, IDENTITY_MISMATCH,
  METADATA_MISSING, METADATA_UNEXPECTED, METADATA_FORBIDDEN, METADATA_TYPE, METADATA_VALUE,
  METADATA_ARRAY_LENGTH, METADATA_ARRAY_DIGEST, METADATA_DIGEST, METADATA_CONFIG,
  TOKENIZER_VALUE, TOKENIZER_ARRAY_LENGTH, TOKENIZER_ARRAY_DIGEST, TOKENIZER_DIGEST,
  TOKENIZER_SPECIAL_ID, TOKENIZER_STOP_ID, TOKENIZER_DOMAIN, TOKENIZER_LOGITS_ROWS,
  TENSOR_MISSING, TENSOR_UNEXPECTED, TENSOR_DUPLICATE, TENSOR_RANK, TENSOR_SHAPE, TENSOR_CODEC,
  CODEC_BLOCK, CODEC_SIZE, CODEC_ROW_HEADER,
  LAYOUT_ALIGNMENT, LAYOUT_DATA_OFFSET, LAYOUT_BOUNDS, LAYOUT_ORDER, LAYOUT_OVERLAP, LAYOUT_GAP,
  LAYOUT_TRAILING,
  STORE_MANIFEST, STORE_GEOMETRY, STORE_DIGEST,
  POLICY_EXCLUSION, POLICY_STATUS,
  INTERNAL,  // a contract the runtime cannot evaluate (the Python runtime would raise); never expected
};

inline std::string_view code_name(Code c) {
  switch (c) {
#define CHARTER_CODE_(x) case Code::x: return #x;
    CHARTER_CODE_(CONTAINER_UNREADABLE) CHARTER_CODE_(CONTAINER_MAGIC) CHARTER_CODE_(CONTAINER_VERSION)
    CHARTER_CODE_(CONTAINER_TRUNCATED) CHARTER_CODE_(CONTAINER_COUNT) CHARTER_CODE_(CONTAINER_STRING)
    CHARTER_CODE_(CONTAINER_VALUE_TYPE) CHARTER_CODE_(CONTAINER_BOOL) CHARTER_CODE_(CONTAINER_ARRAY)
    CHARTER_CODE_(CONTAINER_KEY) CHARTER_CODE_(CONTAINER_DUPLICATE_KEY) CHARTER_CODE_(CONTAINER_ALIGNMENT)
    CHARTER_CODE_(CONTAINER_TENSOR_NAME) CHARTER_CODE_(CONTAINER_TENSOR_RANK)
    CHARTER_CODE_(CONTAINER_TENSOR_DIM) CHARTER_CODE_(CONTAINER_TENSOR_TYPE)
    CHARTER_CODE_(CONTAINER_TENSOR_BLOCK) CHARTER_CODE_(CONTAINER_OVERFLOW) CHARTER_CODE_(CONTAINER_OFFSET)
    CHARTER_CODE_(CONTAINER_EXTENT) CHARTER_CODE_(CONTAINER_HEADER) CHARTER_CODE_(CONTAINER_JSON)
    CHARTER_CODE_(CONTAINER_DTYPE) CHARTER_CODE_(CONTAINER_METADATA) CHARTER_CODE_(CONTAINER_FORMAT)
    CHARTER_CODE_(IDENTITY_ARCHITECTURE) CHARTER_CODE_(IDENTITY_MISSING) CHARTER_CODE_(IDENTITY_MISMATCH)
    CHARTER_CODE_(METADATA_MISSING) CHARTER_CODE_(METADATA_UNEXPECTED) CHARTER_CODE_(METADATA_FORBIDDEN)
    CHARTER_CODE_(METADATA_TYPE) CHARTER_CODE_(METADATA_VALUE) CHARTER_CODE_(METADATA_ARRAY_LENGTH)
    CHARTER_CODE_(METADATA_ARRAY_DIGEST) CHARTER_CODE_(METADATA_DIGEST) CHARTER_CODE_(METADATA_CONFIG)
    CHARTER_CODE_(TOKENIZER_VALUE) CHARTER_CODE_(TOKENIZER_ARRAY_LENGTH) CHARTER_CODE_(TOKENIZER_ARRAY_DIGEST)
    CHARTER_CODE_(TOKENIZER_DIGEST) CHARTER_CODE_(TOKENIZER_SPECIAL_ID) CHARTER_CODE_(TOKENIZER_STOP_ID)
    CHARTER_CODE_(TOKENIZER_DOMAIN) CHARTER_CODE_(TOKENIZER_LOGITS_ROWS)
    CHARTER_CODE_(TENSOR_MISSING) CHARTER_CODE_(TENSOR_UNEXPECTED) CHARTER_CODE_(TENSOR_DUPLICATE)
    CHARTER_CODE_(TENSOR_RANK) CHARTER_CODE_(TENSOR_SHAPE) CHARTER_CODE_(TENSOR_CODEC)
    CHARTER_CODE_(CODEC_BLOCK) CHARTER_CODE_(CODEC_SIZE) CHARTER_CODE_(CODEC_ROW_HEADER)
    CHARTER_CODE_(LAYOUT_ALIGNMENT) CHARTER_CODE_(LAYOUT_DATA_OFFSET) CHARTER_CODE_(LAYOUT_BOUNDS)
    CHARTER_CODE_(LAYOUT_ORDER) CHARTER_CODE_(LAYOUT_OVERLAP) CHARTER_CODE_(LAYOUT_GAP)
    CHARTER_CODE_(LAYOUT_TRAILING) CHARTER_CODE_(STORE_MANIFEST) CHARTER_CODE_(STORE_GEOMETRY)
    CHARTER_CODE_(STORE_DIGEST) CHARTER_CODE_(POLICY_EXCLUSION) CHARTER_CODE_(POLICY_STATUS)
    CHARTER_CODE_(INTERNAL)
#undef CHARTER_CODE_
  }
  return "INTERNAL";
}

// The stage that owns a code (charter.diagnostics._PREFIX_STAGE).
inline std::string_view stage_of(Code c) {
  const std::string_view n = code_name(c);
  auto starts = [&](std::string_view p) { return n.substr(0, p.size()) == p; };
  if (starts("CONTAINER_")) return stage::kContainer;
  if (starts("IDENTITY_")) return stage::kIdentity;
  if (starts("METADATA_")) return stage::kMetadata;
  if (starts("TOKENIZER_")) return stage::kTokenizer;
  if (starts("TENSOR_")) return stage::kTensors;
  if (starts("CODEC_")) return stage::kCodec;
  if (starts("LAYOUT_")) return stage::kLayout;
  if (starts("STORE_")) return stage::kStores;
  if (starts("POLICY_")) return stage::kPolicy;
  return std::string_view("internal");
}

struct Diagnostic {
  Code code = Code::INTERNAL;
  std::string field;
  std::string message;
  bool has_expected = false;
  std::string expected;
  bool has_actual = false;
  std::string actual;
  std::string_view location{};  // file:line:col of the contract fact (a generated literal)
  bool has_offset = false;
  std::uint64_t offset = 0;      // byte offset in the artifact
};

struct Report {
  bool admitted = true;
  std::string_view stage{};  // the stage that ran the failing check (the reader's is "container")
  Diagnostic diagnostic;
  // The buffer ended before the file did, and the header needs the bytes up to `need`: the caller
  // may pass a longer span and run again (the verdict then never depends on the span's length).
  bool needs_more = false;
  std::uint64_t need = 0;
};

}  // namespace charter::rt
