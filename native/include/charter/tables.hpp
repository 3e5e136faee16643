// The literal tables a generated checker hands to the runtime: contract facts as constexpr data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "charter/checked.hpp"

namespace charter::rt {

template <class T>
struct Span {
  const T* data = nullptr;
  std::size_t size = 0;
  constexpr const T* begin() const { return data; }
  constexpr const T* end() const { return data + size; }
  constexpr const T& operator[](std::size_t i) const { return data[i]; }
  constexpr bool empty() const { return size == 0; }
  constexpr const T& back() const { return data[size - 1]; }
};

template <class T, std::size_t N>
constexpr Span<T> span(const T (&a)[N]) {
  return Span<T>{a, N};
}

// A contract value as Python holds it (int, bool, float or str), plus what `float(value)` packs to,
// precomputed by the generator with struct.pack exactly as runtime.py's _same_bits does.
struct Lit {
  enum class Kind : std::uint8_t { Int, Bool, Float, Str };
  Kind kind = Kind::Int;
  Int i{};
  bool b = false;
  double f = 0.0;
  std::string_view s{};
  bool has_f64 = false;  // float(value) exists
  std::uint64_t f64 = 0; // struct.pack("<d", float(value))
  bool has_f32 = false;  // ... and fits a float32 (struct.pack("<f") raises otherwise)
  std::uint32_t f32 = 0;

  static constexpr Lit integer(Int v, bool has64, std::uint64_t b64, bool has32, std::uint32_t b32) {
    Lit l;
    l.kind = Kind::Int;
    l.i = v;
    l.has_f64 = has64; l.f64 = b64; l.has_f32 = has32; l.f32 = b32;
    return l;
  }
  static constexpr Lit boolean(bool v) {
    Lit l;
    l.kind = Kind::Bool;
    l.b = v;
    l.has_f64 = true; l.f64 = v ? 0x3ff0000000000000ull : 0;
    l.has_f32 = true; l.f32 = v ? 0x3f800000u : 0;
    return l;
  }
  static constexpr Lit real(double v, std::uint64_t b64, bool has32, std::uint32_t b32) {
    Lit l;
    l.kind = Kind::Float;
    l.f = v;
    l.has_f64 = true; l.f64 = b64; l.has_f32 = has32; l.f32 = b32;
    return l;
  }
  static constexpr Lit str(std::string_view v, bool has64, std::uint64_t b64, bool has32, std::uint32_t b32) {
    Lit l;
    l.kind = Kind::Str;
    l.s = v;
    l.has_f64 = has64; l.f64 = b64; l.has_f32 = has32; l.f32 = b32;
    return l;
  }
};

struct MetaTypeFact {
  std::string_view key, type, element;  // element empty: none
  std::string_view at;
};

struct KeyAt {
  std::string_view key, at;
};

struct Repeat {
  std::string_view placeholder;
  Int count;            // range(count) ...
  bool listed;          // ... or, when listed, exactly these indices
  Span<Int> indices;
};

struct TensorRow {
  std::string_view name;  // template; `{placeholder}` expands over range(count)
  Span<Repeat> repeat;
  std::string_view role;
  Span<Int> shape;
  std::string_view codec;
  std::string_view at;
};

struct CodecRow {
  std::string_view name;
  Int block, bytes, header;
  std::string_view at;
};

struct LayoutAt {
  std::string_view alignment, layout, packed, sorted, trailing;
};

// A glob of fnmatch.fnmatchcase, compiled by the generator the way fnmatch.translate reads it.
struct Range {
  std::uint32_t lo, hi;
};
struct GlobToken {
  enum class Op : std::uint8_t { Char, Any, Star, Class, Never };
  Op op;
  std::uint32_t ch;   // Char
  bool negate;        // Class
  Span<Range> ranges; // Class
};
struct Glob {
  std::string_view text;
  Span<GlobToken> tokens;
};

struct ConfigFact {
  std::string_view key, type;
  Lit value;
  std::string_view at;
};

// One rule of the value policy (Note [Value rules] in charter/formats/values.py): the first rule
// whose pattern matches a tensor decides whether its values must be finite.
struct ValueRuleRow {
  std::string_view name;  // the exception's name, "finite" or "default"
  Span<Glob> patterns;
  bool check;
  std::string_view at;
};

// One bound of the value policy (Note [Value bounds] in charter/formats/values.py): every element
// of the integer tensors its patterns match lies in [min, max] (a side with has_* false is open).
struct ValueBoundRow {
  std::string_view name;
  Span<Glob> patterns;
  bool has_min;
  Int min;
  bool has_max;
  Int max;
  std::string_view min_at, max_at;
};

struct ExclusionRow {
  std::string_view name;
  Span<Glob> patterns;
  std::string_view count_key;  // empty: the artifact states no inventory of the excluded tensors
  Int source_count;
  std::string_view at;
};

// An embedded store (charter.contract.plan.StorePlan): its manifest facts in check order and its
// tables' expected rows; the generator renders one per store, in the contract's order.
struct StoreField {
  std::string_view name;  // a manifest field (charter/stores.hpp layouts)
  Int value;
  std::string_view at;
};

struct StoreComponent {  // expert-major-v2: one component of every record
  std::string_view name;
  Int ne0, ne1;
  std::string_view at;
};

struct HeadRow {  // ple-rows-v1: the prime segment of one hash head
  Int value;
  std::string_view at;
};

struct StoreFacts {
  std::string_view name, kind, tensor;  // kind: "expert-major-v2" or "ple-rows-v1"
  Span<StoreField> fields;
  Span<StoreComponent> components;
  Span<HeadRow> head_rows;
  std::string_view at;
};

}  // namespace charter::rt
