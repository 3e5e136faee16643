// Strict, header-only safetensors walker: the C++ mirror of the positional walker of
// charter/formats/safetensors.py (`_walk`, the reference whose diagnostics the Python reader
// reports). Same checks in the same order, same codes, fields and byte offsets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "charter/checked.hpp"
#include "charter/fail.hpp"
#include "charter/json.hpp"
#include "charter/report.hpp"
#include "charter/utf8.hpp"
#include "charter/view.hpp"

namespace charter::rt::safetensors {

inline constexpr std::uint64_t kMaxHeaderBytes = 100000000;
// Note [JSON structure limit] in charter/formats/safetensors.py: at most this many of the bytes
// , : [ in the header (strings included), or CONTAINER_HEADER before it is decoded.
inline constexpr std::uint64_t kMaxJsonStructure = 1ull << 21;
// Note [JSON member limit]: at most this many of them `:`.
inline constexpr std::uint64_t kMaxJsonMembers = (1ull << 19) + (1ull << 16);

struct JsonStructure {
  std::uint64_t all{};      // , : [
  std::uint64_t members{};  // :
};

inline JsonStructure json_structure(const unsigned char* text, std::uint64_t n) {
  JsonStructure count;
  for (std::uint64_t i = 0; i < n; ++i) {
    count.members += text[i] == ':';
    count.all += text[i] == ',' || text[i] == ':' || text[i] == '[';
  }
  return count;
}

struct Dtype {
  std::string_view name;
  std::uint64_t bits{};
};

// safetensors 0.8 `Dtype` -> bits per element (formats/safetensors.py DTYPE_BITS).
inline constexpr Dtype kDtypes[] = {
    {"BOOL", 8},        {"F4", 4},          {"F6_E2M3", 6},     {"F6_E3M2", 6},      {"U8", 8},   {"I8", 8},
    {"F8_E5M2", 8},     {"F8_E4M3", 8},     {"F8_E8M0", 8},     {"F8_E4M3FNUZ", 8},  {"F8_E5M2FNUZ", 8},
    {"I16", 16},        {"U16", 16},        {"F16", 16},        {"BF16", 16},        {"I32", 32}, {"U32", 32},
    {"F32", 32},        {"C64", 64},        {"F64", 64},        {"I64", 64},         {"U64", 64},
};

inline const Dtype* dtype(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

namespace detail {

using json::Doc;
using json::Kind;
using json::Member;
using json::Node;

inline std::string join(std::string_view field, std::string_view key) {
  if (field == "header") return key == "__metadata__" ? std::string("metadata") : "tensors." + std::string(key);
  return std::string(field) + "." + std::string(key);
}

struct Walker {
  Doc& js;
  Report& r;
  std::uint64_t base = 8;  // the text starts at file offset 8

  std::uint64_t off(std::uint64_t i) const { return base + std::min<std::uint64_t>(i, js.size()); }

  bool bad(std::uint64_t i, std::string message, std::string field = "header", Code code = Code::CONTAINER_JSON,
           Text expected = std::nullopt, Text actual = std::nullopt) {
    return reject(r, code, std::move(field), std::move(message), off(i), std::move(expected), std::move(actual));
  }

  // _Json.value: a JSON value decoded whole at `i`; errors as the Python wrapper maps them.
  bool value(std::size_t i, const std::string& field, std::size_t* end, std::uint32_t* node) {
    if (js.value(i, end, node, 0)) return true;
    switch (js.err) {
      case json::Err::Dup: return bad(i, "duplicate key", field, Code::CONTAINER_DUPLICATE_KEY);
      case json::Err::Syntax: return bad(js.err_pos, "invalid JSON");
      case json::Err::Depth: return bad(i, "JSON nested too deeply");
      case json::Err::Value: return bad(i, "invalid JSON value (NaN, Infinity or an integer of over 4300 digits)");
      case json::Err::None: break;
    }
    return bad(i, "invalid JSON");
  }

  // _Json.object over the top-level object: [(key, key_at, value, value_at)], end.
  bool top_object(std::size_t i, std::vector<Member>& pairs, std::size_t* end) {
    const std::size_t n = js.size();
    if (i >= n || js.at(i) != '{') return bad(i, "expected a JSON object");
    i = js.ws(i + 1);
    if (i < n && js.at(i) == '}') {
      *end = i + 1;
      return true;
    }
    KeyIndex seen;  // key -> position in `pairs`
    const auto key_of = [&pairs](std::size_t k) { return pairs[k].key; };
    while (true) {
      if (i >= n || js.at(i) != '"') return bad(i, "expected a string key");
      Member m;
      m.key_pos = i;
      std::size_t j{};
      if (!js.scanstring(i + 1, &j, &m.key, &m.lone)) return bad(js.err_pos, "invalid JSON");
      if (m.lone) return bad(i, "string holds a lone surrogate escape", "header");
      if (seen.find(m.key, key_of)) {
        return bad(i, "duplicate key " + show_str(m.key), join("header", m.key), Code::CONTAINER_DUPLICATE_KEY);
      }
      j = js.ws(j);
      if (j >= n || js.at(j) != ':') return bad(j, "expected ':' after a key");
      const std::size_t v_at = js.ws(j + 1);
      if (!value(v_at, join("header", m.key), &j, &m.value)) return false;
      pairs.push_back(m);
      seen.insert(m.key, pairs.size() - 1, key_of);
      i = js.ws(j);
      if (i < n && js.at(i) == ',') {
        i = js.ws(i + 1);
      } else if (i < n && js.at(i) == '}') {
        *end = i + 1;
        return true;
      } else {
        return bad(i, "expected ',' or '}'");
      }
    }
  }

  // The nested object() re-walk of an entry: its keys are checked for lone surrogates in order.
  bool entry_keys(const Node& o, const std::string& field) {
    const Member* m = js.member_begin(o);
    for (std::uint32_t k = 0; k < o.count; ++k) {
      if (m[k].lone) return bad(m[k].key_pos, "string holds a lone surrogate escape", field);
    }
    return true;
  }

  bool metadata(const Node& v, View& view) {
    if (v.kind != Kind::Obj) {
      return bad(v.pos, "__metadata__ must be a map of strings, got " + std::string(json::kind_name(v.kind)), "metadata",
                 Code::CONTAINER_METADATA, std::string("object"), std::string(json::kind_name(v.kind)));
    }
    if (!entry_keys(v, "metadata")) return false;
    const Member* m = js.member_begin(v);
    for (std::uint32_t k = 0; k < v.count; ++k) {
      const Node& x = js.node(m[k].value);
      const auto field = [&] { return "metadata." + std::string(m[k].key); };  // built for a diagnostic only
      if (x.kind != Kind::Str) {
        return bad(x.pos, "metadata values must be strings, got " + std::string(json::kind_name(x.kind)), field(),
                   Code::CONTAINER_METADATA, std::string("str"), std::string(json::kind_name(x.kind)));
      }
      if (x.lone) return bad(x.pos, "string holds a lone surrogate escape", field());
    }
    view.meta.reserve(view.meta.size() + v.count);  // once: no copy of a growing vector at its peak
    for (std::uint32_t k = 0; k < v.count; ++k) {
      MetaEntry e;
      e.key = m[k].key;
      e.type = VType::Str;
      e.offset = 8;
      e.str = js.node(m[k].value).s;
      view.add_meta(e);  // the keys are unique: the object parsed
    }
    return true;
  }

  struct Extent {
    std::string_view name;
    std::uint64_t begin{}, end{}, at{};
    std::size_t index{};
  };

  bool tensor(std::string_view name, const Node& v, std::uint64_t data_len, TensorEntry& t, Extent& x,
              std::vector<Int>& dims_out) {
    const auto field = [&] { return "tensors." + std::string(name); };
    if (v.kind != Kind::Obj) {
      return bad(v.pos, "tensor entry must be an object, got " + std::string(json::kind_name(v.kind)), field(),
                 Code::CONTAINER_HEADER, std::string("object"), std::string(json::kind_name(v.kind)));
    }
    {
      const Member* m = js.member_begin(v);
      for (std::uint32_t k = 0; k < v.count; ++k) {
        if (m[k].lone) return bad(m[k].key_pos, "string holds a lone surrogate escape", field());
      }
    }
    const Member* m = js.member_begin(v);
    static constexpr std::string_view kKeys[3] = {"dtype", "shape", "data_offsets"};
    for (std::uint32_t k = 0; k < v.count; ++k) {
      if (m[k].key != kKeys[0] && m[k].key != kKeys[1] && m[k].key != kKeys[2]) {
        return bad(m[k].key_pos, "unexpected key " + show_str(m[k].key) + " in tensor entry",
                   field() + "." + std::string(m[k].key), Code::CONTAINER_HEADER, std::string("dtype, shape, data_offsets"),
                   std::string(m[k].key));
      }
    }
    const Member* found[3] = {};
    for (int k = 0; k < 3; ++k) {
      found[k] = js.find(v, kKeys[k]);
      if (!found[k]) {
        return bad(v.pos, "tensor entry lacks '" + std::string(kKeys[k]) + "'", field() + "." + std::string(kKeys[k]),
                   Code::CONTAINER_HEADER, std::string(kKeys[k]), std::string("missing"));
      }
    }
    const Node& dt = js.node(found[0]->value);
    const Node& shape = js.node(found[1]->value);
    const Node& offsets = js.node(found[2]->value);
    const Dtype* d = dt.kind == Kind::Str ? dtype(dt.s) : nullptr;
    if (!d) {
      return bad(dt.pos, "unknown dtype", field() + ".dtype", Code::CONTAINER_DTYPE, std::string("a safetensors dtype"),
                 std::nullopt);
    }
    // _elements: folded left to right with the crate's u64 overflow check
    const auto sfield = [&] { return field() + ".shape"; };
    if (shape.kind != Kind::Arr) {
      return bad(shape.pos, "shape must be a list, got " + std::string(json::kind_name(shape.kind)), sfield(),
                 Code::CONTAINER_HEADER, std::string("list"), std::string(json::kind_name(shape.kind)));
    }
    std::uint64_t n = 1;
    const std::uint32_t* dims = js.item_begin(shape);
    t.dims_first = dims_out.size();
    for (std::uint32_t k = 0; k < shape.count; ++k) {
      const Node& dn = js.node(dims[k]);
      if (dn.kind != Kind::Int || dn.num().neg) {
        return bad(shape.pos, "dim " + u64s(k) + " must be a non-negative integer", sfield(), Code::CONTAINER_TENSOR_DIM,
                   std::string("integer >= 0"), std::nullopt);
      }
      if (dn.huge) {  // after a 0, only the dim itself is out of range
        return bad(shape.pos, n != 0 ? "element count overflows a u64 at dim " + u64s(k) : "dim " + u64s(k) +
                   " is more than 2**64-1", sfield(), Code::CONTAINER_OVERFLOW, std::string("<= 2**64-1"),
                   std::nullopt);
      } else if (mul_overflows(n, dn.mag, &n)) {
        return bad(shape.pos, "element count overflows a u64 at dim " + u64s(k), sfield(), Code::CONTAINER_OVERFLOW,
                   std::string("<= 2**64-1"), std::nullopt);
      }
      dims_out.push_back(dn.num());
    }
    std::uint64_t bits{};
    if (mul_overflows(n, d->bits, &bits)) {
      return bad(shape.pos, u64s(n) + " elements of " + std::string(d->name) + " overflow a u64 bit count", sfield(),
                 Code::CONTAINER_OVERFLOW, std::string("<= 2**64-1 bits"), std::nullopt);
    }
    const auto ofield = [&] { return field() + ".data_offsets"; };
    bool ok = offsets.kind == Kind::Arr && offsets.count == 2;
    if (ok) {
      for (std::uint32_t k = 0; k < 2; ++k) {
        const Node& o = js.node(js.item_begin(offsets)[k]);
        ok = ok && o.kind == Kind::Int && o.num().is_u64();
      }
    }
    if (!ok) {
      return bad(offsets.pos, "data_offsets must be two integers in [0, 2**64-1]", ofield(), Code::CONTAINER_OFFSET,
                 std::string("[begin, end]"), std::nullopt);
    }
    const std::uint64_t begin = js.node(js.item_begin(offsets)[0]).mag;
    const std::uint64_t end = js.node(js.item_begin(offsets)[1]).mag;
    if (begin > end) {
      return bad(offsets.pos, "data_offsets begin " + u64s(begin) + " > end " + u64s(end), ofield(),
                 Code::CONTAINER_OFFSET, "begin <= " + u64s(end), u64s(begin));
    }
    if (bits % 8) {
      return bad(shape.pos, u64s(n) + " elements of " + std::string(d->name) + " are not a whole number of bytes", sfield(),
                 Code::CONTAINER_EXTENT, std::string("a multiple of 8 bits"), u64s(bits) + " bits");
    }
    if (end - begin != bits / 8) {
      return bad(offsets.pos,
                 "data_offsets span " + u64s(end - begin) + " bytes, shape and dtype need " + u64s(bits / 8), ofield(),
                 Code::CONTAINER_EXTENT, u64s(bits / 8), u64s(end - begin));
    }
    if (end > data_len) {
      return bad(offsets.pos,
                 "data [" + u64s(begin) + ", " + u64s(end) + ") extends past the end of the file (data section holds " +
                     u64s(data_len) + " bytes)",
                 ofield(), Code::CONTAINER_EXTENT, "end <= " + u64s(data_len), u64s(end));
    }
    t.name = name;
    t.codec = d->name;
    x.name = name;
    x.begin = begin;
    x.end = end;
    x.at = v.pos;
    return true;
  }
};

}  // namespace detail

// Parse a safetensors header from [buf, buf+len) of a file of `file_size` bytes into `v`
// (formats/safetensors.py `parse_safetensors`).
inline bool parse(const unsigned char* buf, std::uint64_t len, std::uint64_t file_size, View& v, Report& r) {
  v.format = Format::Safetensors;
  v.file_size = file_size;
  const std::uint64_t avail = len < file_size ? len : file_size;
  if (avail < 8) {
    return reject(r, Code::CONTAINER_TRUNCATED, "header.length",
                  std::string(file_size < 8 ? "the file" : "the provided buffer") + " holds " + u64s(avail) +
                      " bytes, the header length needs 8",
                  0, std::string(">= 8 bytes"), u64s(avail));
  }
  const std::uint64_t n = load_u64(buf);
  if (n > kMaxHeaderBytes) {
    return reject(r, Code::CONTAINER_HEADER, "header.length",
                  "header length " + u64s(n) + " exceeds the " + u64s(kMaxHeaderBytes) + "-byte limit", 0,
                  "<= " + u64s(kMaxHeaderBytes), u64s(n));
  }
  if (8 + n > avail) {
    if (8 + n <= file_size) {
      r.needs_more = true;
      r.need = 8 + n;
    }
    return reject(r, Code::CONTAINER_TRUNCATED, "header.length",
                  "header of " + u64s(n) + " bytes does not fit in the " +
                      std::string(8 + n > file_size ? "file" : "provided buffer") + " (" + u64s(avail) +
                      " bytes after offset 0)",
                  0, "<= " + u64s(avail - 8), u64s(n));
  }
  const unsigned char* text = buf + 8;
  const JsonStructure counted = json_structure(text, n);
  const std::uint64_t structure = counted.all;
  if (structure > kMaxJsonStructure) {
    return reject(r, Code::CONTAINER_HEADER, "header",
                  "the header holds " + u64s(structure) +
                      " of the JSON characters , : [ (each may start a value), more than the reader's limit of " +
                      u64s(kMaxJsonStructure),
                  8, "<= " + u64s(kMaxJsonStructure), u64s(structure));
  }
  if (counted.members > kMaxJsonMembers) {
    return reject(r, Code::CONTAINER_HEADER, "header",
                  "the header holds " + u64s(counted.members) +
                      " of the JSON character : (each starts a member's value), more than the reader's limit of " +
                      u64s(kMaxJsonMembers),
                  8, "<= " + u64s(kMaxJsonMembers), u64s(counted.members));
  }
  const std::size_t bad = utf8_error(text, n);
  if (bad != n) return reject(r, Code::CONTAINER_JSON, "header", "header is not valid UTF-8", 8 + bad);
  json::Doc js(text, n, json::Numbers::Serde);
  js.reserve(structure + 1);  // every value but the first follows one of , : [
  detail::Walker w{js, r};
  std::vector<json::Member> pairs;
  std::size_t end{};
  if (!w.top_object(js.ws(0), pairs, &end)) return false;
  js.release_stacks();
  if (js.ws(end) != n) return w.bad(js.ws(end), "trailing characters after the header object");
  const std::uint64_t data_offset = 8 + n;
  const std::uint64_t data_len = file_size - data_offset;
  v.has_version = false;
  v.has_alignment = false;
  v.header_len_aligned = n % 8 == 0 ? 1 : 0;
  v.header_end = v.data_offset = data_offset;
  std::vector<detail::Walker::Extent> extents;
  extents.reserve(pairs.size());
  v.tensors.reserve(pairs.size());
  for (const json::Member& p : pairs) {
    const json::Node& value = js.node(p.value);
    if (p.key == "__metadata__") {
      if (!w.metadata(value, v)) return false;
    } else {
      TensorEntry t;
      detail::Walker::Extent x;
      if (!w.tensor(p.key, value, data_len, t, x, v.dims)) return false;
      t.start = data_offset + x.begin;
      t.end = data_offset + x.end;
      t.offset = 8;
      x.index = v.tensors.size();
      extents.push_back(x);
      v.tensors.push_back(std::move(t));
    }
  }
  v.bind_shapes();
  // _check_tiling: sorted by (begin, end), the extents cover [0, data_len) exactly once.
  std::stable_sort(extents.begin(), extents.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t pos = 0;
  for (const auto& x : extents) {
    const auto field = [&] { return "tensors." + std::string(x.name) + ".data_offsets"; };
    if (x.begin > pos) {
      return reject(r, Code::CONTAINER_EXTENT, field(),
                    "gap: tensor begins at " + u64s(x.begin) + " but " +
                        (pos == 0 ? "the data section starts" : "the previous tensor ends") + " at " + u64s(pos),
                    w.off(x.at), u64s(pos), u64s(x.begin));
    }
    if (x.begin < pos) {
      return reject(r, Code::CONTAINER_EXTENT, field(),
                    "overlap: tensor begins at " + u64s(x.begin) + ", before the previous tensor ends at " + u64s(pos),
                    w.off(x.at), u64s(pos), u64s(x.begin));
    }
    pos = x.end;
  }
  if (pos != data_len) {
    return reject(r, Code::CONTAINER_EXTENT, "tensors",
                  "trailing bytes: tensors end at " + u64s(pos) + " but the data section holds " + u64s(data_len) +
                      " bytes",
                  data_offset + pos, u64s(data_len), u64s(pos));
  }
  // Strings without escapes point into the caller's span, which outlives the checks; decoded ones
  // live in `js`, which dies here: those move into the view's arena.
  auto own = [&](std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    return (p >= text && p + s.size() <= text + n) ? s : v.keep(std::string(s));
  };
  bool moved = false;
  for (auto& e : v.meta) {
    const std::string_view k = own(e.key);
    moved = moved || k.data() != e.key.data();
    e.key = k;
    e.str = own(e.str);
  }
  if (moved) v.reindex_meta();
  for (auto& t : v.tensors) t.name = own(t.name);
  return true;
}

}  // namespace charter::rt::safetensors
