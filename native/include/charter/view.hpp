// One view of an artifact's header, whatever its container (charter.admission.view): metadata
// entries in file order and tensor extents in header order. The stages after `container` read
// only this view. String views point into the caller's header span or into `arena`.
#pragma once

#include <cstdint>
#include <forward_list>
#include <string>
#include <string_view>
#include <vector>

#include "charter/checked.hpp"
#include "charter/flat.hpp"
#include "charter/tables.hpp"

namespace charter::rt {

enum class Format : std::uint8_t { Gguf, Safetensors };

inline std::string_view format_name(Format f) { return f == Format::Gguf ? "gguf" : "safetensors"; }

// GGUF value types (gguf.GGUFValueType); the numbering is the file's.
enum class VType : std::uint8_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, Str = 8, Array = 9,
  U64 = 10, I64 = 11, F64 = 12, None = 255,
};

inline std::string_view vtype_name(VType t) {
  switch (t) {
    case VType::U8: return "uint8";
    case VType::I8: return "int8";
    case VType::U16: return "uint16";
    case VType::I16: return "int16";
    case VType::U32: return "uint32";
    case VType::I32: return "int32";
    case VType::F32: return "float32";
    case VType::Bool: return "bool";
    case VType::Str: return "string";
    case VType::Array: return "array";
    case VType::U64: return "uint64";
    case VType::I64: return "int64";
    case VType::F64: return "float64";
    case VType::None: break;
  }
  return "none";
}

// Size of one stored element of a scalar type (strings: the u64 length prefix at least).
inline std::uint64_t vtype_size(VType t) {
  switch (t) {
    case VType::U8: case VType::I8: case VType::Bool: return 1;
    case VType::U16: case VType::I16: return 2;
    case VType::U32: case VType::I32: case VType::F32: return 4;
    case VType::U64: case VType::I64: case VType::F64: case VType::Str: return 8;
    default: return 0;
  }
}

inline bool vtype_is_int(VType t) {
  switch (t) {
    case VType::U8: case VType::I8: case VType::U16: case VType::I16: case VType::U32: case VType::I32:
    case VType::U64: case VType::I64: return true;
    default: return false;
  }
}

// One per metadata key, and a header holds up to a million (Note [JSON structure limit]): the
// offsets of a GGUF record's type tag and value follow from where it starts and its key's length,
// so they are computed, not stored (80 bytes an entry, not 96).
struct MetaEntry {
  std::string_view key;
  VType type = VType::None;
  VType element = VType::None;  // arrays only
  bool gguf = false;              // a GGUF record: u64 key length, key, u32 type tag, value
  std::uint64_t offset = 0;       // start of the entry (GGUF: the key's u64 length)
  std::string_view str{};         // string value (decoded)
  const unsigned char* scalar = nullptr;  // GGUF scalar bytes (little-endian)
  std::uint64_t count = 0;        // array element count
  std::string_view raw{};         // array elements exactly as stored

  // The type tag (GGUF) or the entry (safetensors); offsets lie inside a capped header: no overflow.
  std::uint64_t type_offset() const { return gguf ? offset + 8 + key.size() : offset; }
  // The first byte of the value (GGUF array: its element tag).
  std::uint64_t value_offset() const { return gguf ? type_offset() + 4 : offset; }
  std::uint64_t count_offset() const { return value_offset() + 4; }
  std::uint64_t data_offset() const { return value_offset() + 12; }
};
static_assert(sizeof(MetaEntry) <= 80, "a million entries: keep MetaEntry small");

struct TensorEntry {
  std::string_view name;
  Span<Int> shape;         // the container's order (GGUF: ne[0] first); points into View::dims
  std::size_t dims_first = 0;
  std::string_view codec;  // ggml type name or safetensors dtype
  std::uint64_t row_header = 0;  // bytes the codec puts in front of every row (GGUF: ik_llama.cpp's types)
  std::uint64_t start = 0; // absolute byte offsets in the file
  std::uint64_t end = 0;
  std::uint64_t offset = 0;  // where the tensor's record starts in the header
};

struct View {
  Format format = Format::Gguf;
  bool has_version = false;
  std::uint64_t version = 0;
  bool has_alignment = false;
  std::uint64_t alignment = 0;
  int header_len_aligned = -1;  // -1: not a safetensors header
  std::uint64_t header_end = 0;
  std::uint64_t data_offset = 0;
  std::uint64_t file_size = 0;
  std::vector<MetaEntry> meta;  // file order
  KeyIndex meta_index;                // key -> position in `meta`
  std::vector<TensorEntry> tensors;  // header order
  std::vector<Int> dims;             // every tensor's shape, one after another
  std::forward_list<std::string> arena;  // decoded strings the views above may point into

  const MetaEntry* find(std::string_view key) const {
    const auto at = meta_index.find(key, [this](std::size_t i) { return meta[i].key; });
    return at ? &meta[*at] : nullptr;
  }

  // Append `e` to `meta` unless its key is there already: then the entry that holds it.
  const MetaEntry* add_meta(const MetaEntry& e) {
    if (const auto at = meta_index.insert(e.key, meta.size(), [this](std::size_t i) { return meta[i].key; })) {
      return &meta[*at];
    }
    meta.push_back(e);
    return nullptr;
  }

  // Index `meta` again (after its keys moved).
  void reindex_meta() {
    meta_index.clear();
    for (std::size_t i = 0; i < meta.size(); ++i) {
      meta_index.insert(meta[i].key, i, [this](std::size_t j) { return meta[j].key; });
    }
  }

  // Point each tensor's shape into `dims` (once `dims` no longer grows).
  void bind_shapes() {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const std::size_t end = i + 1 < tensors.size() ? tensors[i + 1].dims_first : dims.size();
      tensors[i].shape = Span<Int>{dims.data() + tensors[i].dims_first, end - tensors[i].dims_first};
    }
  }

  std::string_view keep(std::string s) {
    arena.push_front(std::move(s));
    return arena.front();
  }
};

}  // namespace charter::rt
