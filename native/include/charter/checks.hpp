// The admission checks: the C++ mirror of charter.admission.runtime.Context, method for method.
// Generated checkers call them with a contract's literals; each returns false after filling the
// report with its one diagnostic (Note [Ordered admission] in charter/admission/runtime.py).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "charter/checked.hpp"
#include "charter/companion.hpp"
#include "charter/fail.hpp"
#include "charter/reference.hpp"
#include "charter/report.hpp"
#include "charter/sha256.hpp"
#include "charter/stores.hpp"
#include "charter/tables.hpp"
#include "charter/utf8.hpp"
#include "charter/view.hpp"

namespace charter::rt {

inline constexpr std::string_view kStatusOrder[] = {"structural", "pinned-not-supported", "supported"};

inline int status_index(std::string_view s) {
  for (int i = 0; i < 3; ++i) {
    if (kStatusOrder[i] == s) return i;
  }
  return -1;
}

// fnmatch.fnmatchcase over code points, with the pattern compiled into tokens.
inline bool glob_match(const Glob& g, const std::vector<std::uint32_t>& s) {
  auto one = [](const GlobToken& t, std::uint32_t c) {
    switch (t.op) {
      case GlobToken::Op::Char: return c == t.ch;
      case GlobToken::Op::Any: return true;
      case GlobToken::Op::Class: {
        bool in = false;
        for (const Range& r : t.ranges) in = in || (c >= r.lo && c <= r.hi);
        return in != t.negate;
      }
      default: return false;
    }
  };
  std::size_t p = 0, i = 0, star_p = SIZE_MAX, star_i = 0;
  const std::size_t np = g.tokens.size;
  while (i < s.size()) {
    if (p < np && g.tokens[p].op == GlobToken::Op::Star) {
      star_p = p++;
      star_i = i;
    } else if (p < np && one(g.tokens[p], s[i])) {
      ++p;
      ++i;
    } else if (star_p != SIZE_MAX) {
      p = star_p + 1;
      i = ++star_i;
    } else {
      return false;
    }
  }
  while (p < np && g.tokens[p].op == GlobToken::Op::Star) ++p;
  return p == np;
}

inline std::vector<std::uint32_t> code_points(std::string_view s) {
  std::vector<std::uint32_t> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t i = 0;
  while (i < s.size()) out.push_back(utf8_next(p, s.size(), i));
  return out;
}

inline std::string replace_all(std::string s, std::string_view token, std::string_view with) {
  if (token.empty()) return s;
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t k = s.find(token, pos);
    if (k == std::string::npos) break;
    out.append(s, pos, k - pos);
    out.append(with);
    pos = k + token.size();
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// A file's share of a bundle (Note [Bundle stages] in charter/bundles/admit.py): with `has_only`,
// only the tensors named in `only` are this file's (the rest are other shards' facts); `owned_keys`
// are metadata keys a bundle stage owns (a GGUF split set's split keys).
struct Share {
  bool has_only = false;
  Span<std::string_view> only{};
  Span<std::string_view> owned_keys{};
  // A GGUF split set's later split: the set's metadata is its first split's (Note [GGUF split
  // sets]), so the facts read from metadata (an exclusion's count key) are the first split's to check.
  bool metadata_elsewhere = false;
};

class Context {
 public:
  // `regions`: the bytes outside the header the stores stage reads, as the caller passed them or
  // its reader reads them (Note [Store regions] in charter/stores.hpp); a contract without stores
  // needs none.
  // `companion`: the file a contract's `config` binds, as the caller read it (charter/companion.hpp).
  // `share`: the file's share of a bundle, when it is one of a bundle's weight files.
  // `reference`: a header parsed once, whose value digests this one's equal values take (Note
  // [Reference header] in charter/reference.hpp), or none.
  Context(const View& v, Report& r, std::string_view require_status, store::Regions regions = store::Regions({}),
          Companion companion = {}, Share share = {}, const Reference* reference = nullptr)
      : v_(v), r_(r), require_(require_status), regions_(regions), companion_(companion), share_(share),
        reference_(reference) {
    if (share_.has_only) only_.insert(share_.only.begin(), share_.only.end());
  }

  const View& view() const { return v_; }

  // --- container -----------------------------------------------------------------------------
  bool container_format(std::string_view fmt, std::string_view at) {
    if (format_name(v_.format) != fmt) {
      return mismatch(Code::CONTAINER_FORMAT, "format", show_str(fmt), show_str(format_name(v_.format)), at, 0);
    }
    return true;
  }

  bool container_version(const Int& version, std::string_view at) {
    if (!v_.has_version || Int(v_.version) != version) {
      return mismatch(Code::CONTAINER_VERSION, "container.version", version.str(),
                      v_.has_version ? u64s(v_.version) : "None", at, 4);
    }
    return true;
  }

  bool container_alignment(const Int& alignment, std::string_view at) {
    if (!v_.has_alignment || Int(v_.alignment) != alignment) {
      const MetaEntry* e = v_.find("general.alignment");
      return mismatch(Code::CONTAINER_ALIGNMENT, "container.alignment", alignment.str(),
                      v_.has_alignment ? u64s(v_.alignment) : "None", at,
                      e ? std::optional<std::uint64_t>(e->offset) : std::nullopt);
    }
    return true;
  }

  bool container_header_aligned(bool aligned, std::string_view at) {
    if (v_.header_len_aligned != (aligned ? 1 : 0)) {
      const std::string actual = v_.header_len_aligned < 0 ? "None" : (v_.header_len_aligned ? "true" : "false");
      return mismatch(Code::CONTAINER_HEADER, "container.header_aligned", aligned ? "true" : "false", actual, at, 0,
                      " (header length multiple of 8)");
    }
    return true;
  }

  // --- identity ------------------------------------------------------------------------------
  bool identity(std::string_view key, std::string_view value, std::string_view at) {
    const MetaEntry* e = v_.find(key);
    const std::string field = "identity." + std::string(key);
    if (!e) {
      return reject(r_, Code::IDENTITY_MISSING, field, "key " + show_str(key) + " is missing", std::nullopt,
                    std::string(value), std::string("missing"), at);
    }
    if (e->type != VType::Str) {
      return mismatch(Code::IDENTITY_MISMATCH, field, "'string'", show_str(vtype_name(e->type)), at, e->offset,
                      " (type)");
    }
    if (e->str != value) {
      const bool arch = key.size() >= 13 && key.substr(key.size() - 13) == ".architecture";
      return mismatch(arch ? Code::IDENTITY_ARCHITECTURE : Code::IDENTITY_MISMATCH, field, show_str(value),
                      show_str(e->str), at, e->value_offset());
    }
    return true;
  }

  // --- metadata: key set and types -----------------------------------------------------------
  bool meta_types(Span<MetaTypeFact> facts) {
    for (const MetaTypeFact& f : facts) {
      const MetaEntry* e = v_.find(f.key);
      const std::string field = "metadata." + std::string(f.key);
      if (!e) {
        return reject(r_, Code::METADATA_MISSING, field, "key " + show_str(f.key) + " is missing", std::nullopt,
                      std::string(f.type), std::string("missing"), f.at);
      }
      if (vtype_name(e->type) != f.type) {
        return mismatch(Code::METADATA_TYPE, field, show_str(f.type), show_str(vtype_name(e->type)), f.at,
                        e->type_offset());
      }
      if (!f.element.empty() && (e->element == VType::None || vtype_name(e->element) != f.element)) {
        return mismatch(Code::METADATA_TYPE, field + ".element", show_str(f.element),
                        e->element == VType::None ? "None" : show_str(vtype_name(e->element)), f.at, e->value_offset());
      }
    }
    return true;
  }

  bool meta_key_set(Span<std::string_view> pinned, Span<KeyAt> forbidden, std::string_view extra,
                    std::string_view at) {
    for (const KeyAt& f : forbidden) {
      if (const MetaEntry* e = v_.find(f.key)) {
        return reject(r_, Code::METADATA_FORBIDDEN, "metadata." + std::string(f.key),
                      "forbidden key " + show_str(f.key) + " is present", e->offset, std::string("absent"),
                      std::string("present"), f.at);
      }
    }
    if (extra == "reject") {
      std::unordered_map<std::string_view, bool> keep;
      keep.reserve(pinned.size + 1);
      for (std::string_view k : pinned) keep.emplace(k, true);
      for (std::string_view k : share_.owned_keys) keep.emplace(k, true);
      if (v_.format == Format::Gguf) keep.emplace("general.alignment", true);
      for (const MetaEntry& e : v_.meta) {
        if (!keep.count(e.key)) {
          return reject(r_, Code::METADATA_UNEXPECTED, "metadata." + std::string(e.key),
                        "key " + show_str(e.key) + " (" + std::string(vtype_name(e.type)) +
                            ") is not in the contract (extra_keys: reject)",
                        e.offset, std::string("absent"), std::string("present"), at);
        }
      }
    }
    return true;
  }

  // --- values (metadata- or tokenizer-owned) --------------------------------------------------
  bool value(std::string_view stage_, std::string_view key, std::string_view ctype, const Lit& expected,
             std::string_view at) {
    const MetaEntry* e = entry(key);
    if (!e) return false;
    bool same;
    if (ctype == "float32" || ctype == "float64") {
      const bool f32 = ctype == "float32";
      std::uint64_t bits{};
      if (!float_bits(*e, f32, &bits)) return false;
      if (f32 ? !expected.has_f32 : !expected.has_f64) {
        return internal("value " + show_lit(expected) + " does not pack as " + std::string(ctype), at);
      }
      same = bits == (f32 ? expected.f32 : expected.f64);
    } else {
      same = typed_equal(*e, expected);
    }
    if (!same) {
      const bool tok = stage_ == "tokenizer";
      return mismatch(tok ? Code::TOKENIZER_VALUE : Code::METADATA_VALUE, std::string(stage_) + "." + std::string(key),
                      show_lit(expected), show_entry(*e), at, e->value_offset());
    }
    return true;
  }

  bool string_digest(std::string_view stage_, std::string_view key, std::string_view sha, std::string_view at) {
    const MetaEntry* e = entry(key);
    if (!e) return false;
    if (e->type != VType::Str) return internal("string_digest of a non-string value", at);
    const std::string actual = value_sha256(*e);
    if (actual != sha) {
      const bool tok = stage_ == "tokenizer";
      return mismatch(tok ? Code::TOKENIZER_DIGEST : Code::METADATA_DIGEST,
                      std::string(stage_) + "." + std::string(key) + ".sha256", show_str(sha), show_str(actual), at,
                      e->value_offset());
    }
    return true;
  }

  bool array(std::string_view stage_, std::string_view key, const Int& length, bool has_values, Span<Lit> values,
             std::string_view sha, std::string_view at) {
    const MetaEntry* e = entry(key);
    if (!e) return false;
    if (e->type != VType::Array) return internal("array check of a non-array value", at);
    const bool tok = stage_ == "tokenizer";
    const std::string base = std::string(stage_) + "." + std::string(key);
    if (Int(e->count) != length) {
      return mismatch(tok ? Code::TOKENIZER_ARRAY_LENGTH : Code::METADATA_ARRAY_LENGTH, base + ".length", length.str(),
                      u64s(e->count), at, e->count_offset());
    }
    if (has_values) {
      const auto* raw = reinterpret_cast<const unsigned char*>(e->raw.data());
      std::size_t pos = 0;
      const std::uint64_t n = std::min<std::uint64_t>(values.size, e->count);
      for (std::uint64_t i = 0; i < n; ++i) {
        MetaEntry item;
        item.type = e->element;
        if (e->element == VType::Str) {
          const std::uint64_t len = load_u64(raw + pos);
          item.str = std::string_view(reinterpret_cast<const char*>(raw + pos + 8), len);
          pos += 8 + len;
        } else {
          item.scalar = raw + pos;
          pos += vtype_size(e->element);
        }
        const Lit& want = values[i];
        bool same;
        if (e->element == VType::F32 || e->element == VType::F64) {
          const bool f32 = e->element == VType::F32;
          std::uint64_t bits{};
          if (!float_bits(item, f32, &bits)) return false;
          if (f32 ? !want.has_f32 : !want.has_f64) return internal("array value does not pack", at);
          same = bits == (f32 ? want.f32 : want.f64);
        } else {
          same = typed_equal(item, want);
        }
        if (!same) {
          return mismatch(tok ? Code::TOKENIZER_VALUE : Code::METADATA_VALUE, base + ".values[" + u64s(i) + "]",
                          show_lit(want), show_entry(item), at, e->data_offset());
        }
      }
    }
    if (!sha.empty()) {
      const std::string actual = value_sha256(*e);
      if (actual != sha) {
        return mismatch(tok ? Code::TOKENIZER_ARRAY_DIGEST : Code::METADATA_ARRAY_DIGEST, base + ".sha256",
                        show_str(sha), show_str(actual), at, e->data_offset());
      }
    }
    return true;
  }

  // --- companion config (a cross-artifact constraint, checked with metadata) ---------------
  // Rows (dotted key, type, expected value, at) checked in the JSON file beside the artifact,
  // which the caller read (charter/companion.hpp); the order and codes of Context.config.
  // `at` (the contract's `config.file`) is cited when that file cannot be read.
  bool config(std::string_view file, Span<ConfigFact> facts, std::string_view at) {
    const std::string name(file);
    auto unreadable = [&](const std::string& why) {
      return reject(r_, Code::METADATA_CONFIG, "config", why, std::nullopt, std::nullopt, std::nullopt, at);
    };
    if (!companion_.read) {
      const std::string why = companion_.error.empty() ? "not provided" : std::string(companion_.error);
      return unreadable("cannot read " + name + " beside the artifact: " + why);
    }
    if (companion_.size > kMaxCompanionBytes) {
      return unreadable(name + " is more than " + u64s(kMaxCompanionBytes) + " bytes (the limit)");
    }
    const std::size_t n = static_cast<std::size_t>(companion_.size);
    const std::size_t bad = utf8_error(companion_.data, n);
    if (bad != n) return unreadable(name + " is not valid JSON: not UTF-8 at byte " + u64s(bad));
    if (n >= 3 && companion_.data[0] == 0xEF && companion_.data[1] == 0xBB && companion_.data[2] == 0xBF) {
      return unreadable(name + " is not valid JSON: Unexpected UTF-8 BOM");
    }
    json::Doc js(companion_.data, n);
    std::size_t end{};
    std::uint32_t root{};
    if (!js.value(js.ws(0), &end, &root, 0) || js.ws(end) != n) {
      return unreadable(name + " is not valid JSON (at byte " + u64s(js.err == json::Err::None ? js.ws(end) : js.err_pos) +
                        ")");
    }
    for (const ConfigFact& f : facts) {
      const std::string field = "config." + std::string(f.key);
      const json::Node* node = &js.node(root);
      std::string_view rest = f.key;
      while (true) {
        const std::size_t dot = rest.find('.');
        const std::string_view part = rest.substr(0, dot);
        const json::Member* m = node->kind == json::Kind::Obj ? js.find(*node, part) : nullptr;
        if (!m) {
          return reject(r_, Code::METADATA_MISSING, field, name + " has no key " + show_str(f.key), std::nullopt,
                        std::string(f.type), std::string("missing"), f.at);
        }
        node = &js.node(m->value);
        if (dot == std::string_view::npos) break;
        rest = rest.substr(dot + 1);
      }
      const std::string_view actual_type = companion::type_name(node->kind);
      if (actual_type != f.type) {
        return mismatch(Code::METADATA_TYPE, field, show_str(f.type), show_str(actual_type), f.at, std::nullopt,
                        " (" + name + ")");
      }
      bool same;
      if (f.type == "float64") {
        if (!f.value.has_f64) return internal("value " + show_lit(f.value) + " does not pack as float64", f.at);
        const double d = companion::to_double(node->s);
        std::uint64_t bits{};
        std::memcpy(&bits, &d, 8);
        same = bits == f.value.f64;
      } else {
        same = companion::py_equal(*node, f.value);
      }
      if (!same) {
        return mismatch(Code::METADATA_VALUE, field, show_lit(f.value), show_json(*node), f.at, std::nullopt,
                        " (" + name + ")");
      }
    }
    return true;
  }

  // --- stores (charter.admission.stores; Note [Store regions] in charter/stores.hpp) ------------
  // Each store's manifest region is read through the caller's regions only, bounded by the extent
  // of the tensor that holds the store, and compared with the contract's literals in the Python
  // stage's order: identity fields (STORE_MANIFEST), derived geometry and tables (STORE_GEOMETRY),
  // then digests (STORE_DIGEST). Tables are checked by loops, whatever their length.
  bool expert_major_store(const StoreFacts& s) {
    using namespace store;
    if (!holds(s.tensor)) return true;
    const std::string pre = "stores." + std::string(s.name);
    const TensorEntry* t = nullptr;
    if (!store_extent(s, pre, kEmManifest.size, &t)) return false;
    const std::uint64_t base = t->start, extent = t->end - t->start;
    const unsigned char* head = nullptr;
    if (!read(num(base), num(kEmManifest.size), &head)) return false;
    if (std::string_view(reinterpret_cast<const char*>(head), 4) != kEmMagic) {
      return mismatch(Code::STORE_MANIFEST, pre + ".manifest.magic", show_bytes(kEmMagic),
                      show_bytes(std::string_view(reinterpret_cast<const char*>(head), 4)), s.at, base);
    }
    for (const StoreField& f : s.fields) {
      if (!store_field(head, kEmManifest, base, Code::STORE_MANIFEST, pre + ".manifest.", f.name, num(f.value), f.at)) {
        return false;
      }
    }
    const Field& count_field = *kEmManifest.find("components");
    if (load(head, count_field) != s.components.size) {
      return mismatch(Code::STORE_MANIFEST, pre + ".manifest.components", u64s(s.components.size),
                      u64s(load(head, count_field)), s.at, base + count_field.offset);
    }
    // charter.formats.stores.expertmajor.geometry, over the contract's literals
    Num layers, experts, group, group_bytes, alignment;
    if (!want(s, "layers", &layers) || !want(s, "experts", &experts) || !want(s, "group_size", &group) ||
        !want(s, "group_bytes", &group_bytes) || !want(s, "record_alignment", &alignment)) {
      return false;
    }
    std::vector<EmComponent> comps;
    comps.reserve(s.components.size);
    Num cursor = num(0);
    bool ok = true;
    for (const StoreComponent& c : s.components) {
      const Num size = num(c.ne0) / group * group_bytes * num(c.ne1);
      ok = ok && size.ok && cursor.ok;
      comps.push_back(EmComponent{c.name, num(c.ne0).v, num(c.ne1).v, cursor.v, size.v, c.at});
      ok = ok && num(c.ne0).ok && num(c.ne1).ok;
      cursor = cursor + size;
    }
    const Num record_bytes = align_up(cursor, alignment);
    const Num record_count = layers * experts;
    const Num table_offset = num(kEmComponentTable) + num(kEmComponent.size) * num(s.components.size);
    const Num records_offset = align_up(table_offset + num(kEmRecord.size) * record_count, alignment);
    const Num size = records_offset + record_count * record_bytes;
    if (!(ok && record_bytes.ok && record_count.ok && table_offset.ok && records_offset.ok && size.ok)) {
      return internal("the geometry of store " + show_str(s.name) + " is out of range", s.at);
    }
    const std::pair<std::string_view, u128> derived[] = {
        {"record_bytes", record_bytes.v}, {"table_offset", table_offset.v},
        {"records_offset", records_offset.v}, {"record_count", record_count.v}};
    for (const auto& [field, value] : derived) {
      if (!store_field(head, kEmManifest, base, Code::STORE_GEOMETRY, pre + ".manifest.", field, num(value), s.at)) {
        return false;
      }
    }
    if (extent != size.v) {
      return mismatch(Code::STORE_GEOMETRY, pre + ".size", u128s(size.v), u64s(extent), s.at, t->offset);
    }
    const Num comp_len = num(kEmComponent.size) * num(s.components.size);
    if (!store_bounded(pre, *t, num(kEmComponentTable), comp_len, "components", s.at)) return false;
    const unsigned char* comp_raw = nullptr;
    if (!read(num(base) + num(kEmComponentTable), comp_len, &comp_raw)) return false;
    for (std::size_t i = 0; i < comps.size(); ++i) {
      const EmComponent& want_c = comps[i];
      const unsigned char* entry = comp_raw + i * kEmComponent.size;
      const std::uint64_t at = base + kEmComponentTable + i * kEmComponent.size;
      const std::string field = pre + ".components[" + u64s(i) + "].";
      const std::string name = ascii_name(entry, 16);
      if (name != want_c.name) {
        return mismatch(Code::STORE_GEOMETRY, field + "name", show_str(want_c.name), show_str(name), want_c.at, at);
      }
      const std::pair<std::string_view, u128> rows[] = {
          {"ne0", want_c.ne0}, {"ne1", want_c.ne1}, {"offset", want_c.offset}, {"bytes", want_c.bytes}};
      for (const auto& [f, value] : rows) {
        const Field& lay = *kEmComponent.find(f);
        if (load(entry, lay) != value) {
          return mismatch(Code::STORE_GEOMETRY, field + std::string(f), u128s(value), u64s(load(entry, lay)),
                          want_c.at, at + lay.offset);
        }
      }
    }
    const Num table_len = num(kEmRecord.size) * record_count;
    if (!store_bounded(pre, *t, table_offset, table_len, "records", s.at)) return false;
    const unsigned char* table = nullptr;
    if (!read(num(base) + table_offset, table_len, &table)) return false;
    const std::uint64_t count = static_cast<std::uint64_t>(record_count.v);  // bounded: <= kMaxTableBytes / 64
    const u128 per_layer = experts.v, first = records_offset.v, stride = record_bytes.v;
    const Field &f_layer = *kEmRecord.find("layer"), &f_expert = *kEmRecord.find("expert"),
                &f_offset = *kEmRecord.find("offset");
    for (std::uint64_t i = 0; i < count; ++i) {
      const unsigned char* rec = table + i * kEmRecord.size;
      const u128 layer = load(rec, f_layer), expert = load(rec, f_expert), offset = load(rec, f_offset);
      const u128 want_layer = i / per_layer, want_expert = i % per_layer, want_offset = first + i * stride;
      if (layer == want_layer && expert == want_expert && offset == want_offset) continue;
      const Field& f = layer != want_layer ? f_layer : expert != want_expert ? f_expert : f_offset;
      const u128 value = layer != want_layer ? layer : expert != want_expert ? expert : offset;
      const u128 expected = layer != want_layer ? want_layer : expert != want_expert ? want_expert : want_offset;
      return mismatch(Code::STORE_GEOMETRY, pre + ".records[" + u64s(i) + "]." + std::string(f.name),
                      u128s(expected), u128s(value), s.at,
                      base + static_cast<std::uint64_t>(table_offset.v) + i * kEmRecord.size + f.offset);
    }
    const Field& sha = *kEmManifest.find("sha256");
    unsigned char zeroed[128];
    std::memcpy(zeroed, head, sizeof zeroed);
    std::memset(zeroed + sha.offset, 0, sha.width);
    Sha256 h;
    h.update(zeroed, sizeof zeroed);
    if (comp_len.v) h.update(comp_raw, static_cast<std::size_t>(comp_len.v));
    if (table_len.v) h.update(table, static_cast<std::size_t>(table_len.v));
    return store_digest(h, head + sha.offset, pre, s.at, base + sha.offset);
  }

  bool ple_store(const StoreFacts& s) {
    using namespace store;
    if (!holds(s.tensor)) return true;
    const std::string pre = "stores." + std::string(s.name);
    const TensorEntry* t = nullptr;
    if (!store_extent(s, pre, kPleManifest.size, &t)) return false;
    const std::uint64_t base = t->start, extent = t->end - t->start;
    const unsigned char* head = nullptr;
    if (!read(num(base), num(kPleManifest.size), &head)) return false;
    if (std::string_view(reinterpret_cast<const char*>(head), 4) != kPleMagic) {
      return mismatch(Code::STORE_MANIFEST, pre + ".manifest.magic", show_bytes(kPleMagic),
                      show_bytes(std::string_view(reinterpret_cast<const char*>(head), 4)), s.at, base);
    }
    for (const StoreField& f : s.fields) {
      if (f.name == "group_bytes") continue;  // a codec fact the manifest does not repeat
      if (!store_field(head, kPleManifest, base, Code::STORE_MANIFEST, pre + ".manifest.", f.name, num(f.value), f.at)) {
        return false;
      }
    }
    const std::size_t heads = s.head_rows.size > kPleHeadsMax ? s.head_rows.size : kPleHeadsMax;
    for (std::size_t i = 0; i < heads; ++i) {
      const std::string field = "head_rows[" + u64s(i) + "]";
      const bool stated = i < s.head_rows.size;
      if (!store_field(head, kPleManifest, base, Code::STORE_MANIFEST, pre + ".manifest.", field,
                       stated ? num(s.head_rows[i].value) : num(0), stated ? s.head_rows[i].at : s.at)) {
        return false;
      }
    }
    // charter.formats.stores.ple.geometry, over the contract's literals
    Num logical, row_alignment, width, group, group_bytes, rows_per_page, page_header_bytes, page_alignment;
    if (!want(s, "logical_rows", &logical) || !want(s, "row_alignment", &row_alignment) || !want(s, "width", &width) ||
        !want(s, "group_size", &group) || !want(s, "group_bytes", &group_bytes) ||
        !want(s, "rows_per_page", &rows_per_page) || !want(s, "page_header_bytes", &page_header_bytes) ||
        !want(s, "page_alignment", &page_alignment)) {
      return false;
    }
    const Num padded = align_up(logical, row_alignment);
    const Num row_bytes = width / group * group_bytes;
    const Num pages = ceil_div(padded, rows_per_page);
    const Num stride = align_up(page_header_bytes + rows_per_page * row_bytes, page_alignment);
    const Num payload = align_up(num(kPlePageTable) + num(kPleDigest) * pages, page_alignment);
    const Num size = payload + pages * stride;
    if (!(padded.ok && row_bytes.ok && pages.ok && stride.ok && payload.ok && size.ok)) {
      return internal("the geometry of store " + show_str(s.name) + " is out of range", s.at);
    }
    const std::pair<std::string_view, u128> derived[] = {
        {"padded_rows", padded.v}, {"encoded_row_bytes", row_bytes.v}, {"page_count", pages.v},
        {"page_stride", stride.v}, {"page_table_offset", kPlePageTable}, {"payload_offset", payload.v}};
    for (const auto& [field, value] : derived) {
      if (!store_field(head, kPleManifest, base, Code::STORE_GEOMETRY, pre + ".manifest.", field, num(value), s.at)) {
        return false;
      }
    }
    if (extent != size.v) {
      return mismatch(Code::STORE_GEOMETRY, pre + ".size", u128s(size.v), u64s(extent), s.at, t->offset);
    }
    const u128 region = payload.v - kPlePageTable;  // payload >= 512 + 32 * pages
    if (!store_bounded(pre, *t, num(kPlePageTable), num(region), "page_table", s.at)) return false;
    const Field& sha = *kPleManifest.find("sha256");
    unsigned char zeroed[512];
    std::memcpy(zeroed, head, sizeof zeroed);
    std::memset(zeroed + sha.offset, 0, sha.width);
    Sha256 h;
    h.update(zeroed, sizeof zeroed);
    const u128 end = base + kPlePageTable + region;  // within the extent (bounded above)
    for (u128 pos = base + kPlePageTable; pos < end;) {
      const u128 n = end - pos < kChunk ? end - pos : kChunk;
      const unsigned char* chunk = nullptr;
      if (!read(num(pos), num(n), &chunk)) return false;
      h.update(chunk, static_cast<std::size_t>(n));
      pos += n;
    }
    if (!store_digest(h, head + sha.offset, pre, s.at, base + sha.offset)) return false;
    if (pages.v == 0) return internal("store " + show_str(s.name) + " has no pages", s.at);
    Num page_width, page_codec_version, page_group, page_family;
    const u128 last = pages.v - 1;
    const u128 list[2] = {0, last};
    for (std::size_t k = 0; k < (last == 0 ? 1u : 2u); ++k) {
      const u128 page = list[k];
      const Num at_page = num(base) + payload + num(page) * stride;
      const unsigned char* ph = nullptr;
      if (!at_page.ok) return internal("page offset out of range", s.at);
      if (!read(at_page, num(kPlePage.size), &ph)) return false;
      if (!want(s, "width", &page_width) || !want(s, "rows_per_page", &rows_per_page) ||
          !want(s, "codec_version", &page_codec_version) || !want(s, "group_size", &page_group) ||
          !want(s, "family", &page_family)) {
        return false;
      }
      const u128 first = page * rows_per_page.v;
      const u128 valid = padded.v - first < rows_per_page.v ? padded.v - first : rows_per_page.v;
      const std::pair<std::string_view, Num> expected[] = {
          {"page_index", num(page)}, {"first_row", num(first)}, {"valid_rows", num(valid)},
          {"width", page_width}, {"encoded_row_bytes", row_bytes}, {"rows_per_page", rows_per_page},
          {"codec_version", page_codec_version}, {"group_size", page_group}, {"family", page_family}};
      const std::uint64_t where = static_cast<std::uint64_t>(at_page.v);
      for (const auto& [field, value] : expected) {
        if (!store_field(ph, kPlePage, where, Code::STORE_GEOMETRY, pre + ".pages[" + u128s(page) + "].", field,
                         value, s.at)) {
          return false;
        }
      }
    }
    return true;
  }

  // --- tokenizer -----------------------------------------------------------------------------
  bool special_id(std::string_view key, std::string_view name, const Int& value, std::string_view at) {
    const MetaEntry* e = entry(key);
    if (!e) return false;
    if (!py_equal(*e, value)) {
      return mismatch(Code::TOKENIZER_SPECIAL_ID, "tokenizer.special." + std::string(name), value.str(), show_entry(*e),
                      at, e->value_offset(), " (" + std::string(key) + ")");
    }
    return true;
  }

  bool stop_id(std::string_view key, Span<Int> stop_ids, std::string_view at) {
    const MetaEntry* e = entry(key);
    if (!e) return false;
    for (const Int& s : stop_ids) {
      if (py_equal(*e, s)) return true;
    }
    std::string ids = "[";
    for (std::size_t i = 0; i < stop_ids.size; ++i) ids += (i ? ", " : "") + stop_ids[i].str();
    ids += "]";
    return reject(r_, Code::TOKENIZER_STOP_ID, "tokenizer.stop." + std::string(key),
                  std::string(key) + " = " + show_entry(*e) + " is not one of the model's stop ids " + ids,
                  e->value_offset(), ids, show_entry(*e), at);
  }

  bool token_domain(std::string_view key, const Int& ids, std::string_view at) {
    const MetaEntry* e = entry(key);
    if (!e) return false;
    if (e->type != VType::Array && e->type != VType::Str) return internal("token domain of a scalar", at);
    if (e->type != VType::Array || Int(e->count) != ids) {
      const std::string held = e->type == VType::Array ? u64s(e->count) : std::string("?");
      return reject(r_, Code::TOKENIZER_DOMAIN, "tokenizer.ids",
                    std::string(key) + " holds " + held + " tokens, but the model's tokenizer domain is " + ids.str() +
                        " ids",
                    e->offset, ids.str(), held, at);
    }
    return true;
  }

  bool logits_rows(std::string_view tensor, std::int64_t axis, const Int& rows, std::string_view at) {
    const TensorEntry* t = tensor_named(tensor);
    if (!t) return true;  // absence and rank are facts of the tensors stage
    const std::int64_t rank = static_cast<std::int64_t>(t->shape.size);
    if (axis >= rank) return true;
    if (axis < -rank) return internal("logits axis out of range", at);
    const Int& got = t->shape[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)];
    if (got != rows) {
      return reject(r_, Code::TOKENIZER_LOGITS_ROWS, "tokenizer.logits_rows",
                    std::string(tensor) + " has " + got.str() + " rows on axis " + std::to_string(axis) +
                        ", but the model's physical logits rows are " + rows.str(),
                    t->offset, rows.str(), got.str(), at);
    }
    return true;
  }

  // --- tensors -------------------------------------------------------------------------------
  void exclude(Span<Glob> patterns) { excluded_ = patterns; }

  bool tensors(Span<TensorRow> table, std::string_view at_set) {
    // expected: name -> row, in first-insertion order (a Python dict)
    std::size_t total = 0;  // names the rows expand to: reserved, so the views of `index` stay valid
    for (const TensorRow& row : table) {
      std::size_t n = 1;
      for (const Repeat& rep : row.repeat) {
        const std::uint64_t k = rep.listed ? rep.indices.size : (rep.count.neg || rep.count.huge ? 0 : rep.count.mag);
        if (mul_overflows(n, k, &n)) return internal("repeat counts out of range", row.at);
      }
      if (add_overflows(total, n, &total)) return internal("repeat counts out of range", row.at);
    }
    std::vector<std::string> names;
    names.reserve(total);
    std::vector<const TensorRow*> rows;
    rows.reserve(total);
    std::unordered_map<std::string_view, std::size_t> index;
    index.reserve(total);
    for (const TensorRow& row : table) {
      std::vector<std::string> expanded{std::string(row.name)};
      for (const Repeat& rep : row.repeat) {
        const std::string token = "{" + std::string(rep.placeholder) + "}";
        std::vector<std::string> next;
        if (!rep.listed && rep.count.huge && !rep.count.neg) return internal("repeat count out of range", row.at);
        const std::uint64_t count = rep.listed ? rep.indices.size : (rep.count.neg ? 0 : rep.count.mag);
        for (const std::string& n : expanded) {
          for (std::uint64_t i = 0; i < count; ++i) {
            next.push_back(replace_all(n, token, rep.listed ? rep.indices[i].str() : u64s(i)));
          }
        }
        expanded = std::move(next);
      }
      for (std::string& n : expanded) {
        if (share_.has_only && !only_.count(n)) continue;  // another shard's tensor
        auto it = index.find(n);
        if (it != index.end()) {
          rows[it->second] = &row;
        } else {
          names.push_back(std::move(n));
          index.emplace(names.back(), rows.size());
          rows.push_back(&row);
        }
      }
    }
    KeyIndex actual;  // name -> position in v_.tensors
    const auto name_of = [this](std::size_t k) { return v_.tensors[k].name; };
    for (std::size_t k = 0; k < v_.tensors.size(); ++k) {
      const TensorEntry& t = v_.tensors[k];
      if (actual.insert(t.name, k, name_of)) {
        return reject(r_, Code::TENSOR_DUPLICATE, "tensors." + std::string(t.name),
                      "tensor " + show_str(t.name) + " appears twice", t.offset, std::string("1"), std::string("2"));
      }
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!actual.find(names[i], name_of)) {
        return reject(r_, Code::TENSOR_MISSING, "tensors." + names[i], "tensor " + show_str(names[i]) + " is missing",
                      std::nullopt, std::string("present"), std::string("missing"), rows[i]->at);
      }
    }
    for (const TensorEntry& t : v_.tensors) {
      if (!index.count(t.name) && !excluded(t.name)) {
        return reject(r_, Code::TENSOR_UNEXPECTED, "tensors." + std::string(t.name),
                      "tensor " + show_str(t.name) + " is not in the contract", t.offset, std::string("absent"),
                      std::string("present"), at_set);
      }
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      const TensorRow& row = *rows[i];
      const TensorEntry& t = v_.tensors[*actual.find(names[i], name_of)];
      const std::string field = "tensors." + names[i];
      if (t.shape.size != row.shape.size) {
        return mismatch(Code::TENSOR_RANK, field + ".rank", u64s(row.shape.size), u64s(t.shape.size), row.at, t.offset,
                        " (" + std::string(row.role) + ")");
      }
      for (std::size_t j = 0; j < row.shape.size; ++j) {
        if (row.shape[j] != t.shape[j]) {
          return mismatch(Code::TENSOR_SHAPE, field + ".shape[" + u64s(j) + "]", row.shape[j].str(), t.shape[j].str(),
                          row.at, t.offset, " (" + std::string(row.role) + ")");
        }
      }
      if (t.codec != row.codec) {
        return mismatch(Code::TENSOR_CODEC, field + ".codec", show_str(row.codec), show_str(t.codec), row.at, t.offset);
      }
    }
    return true;
  }

  // --- codec ---------------------------------------------------------------------------------
  // Rows of a header and blocks fill the extent, and the file leaves room for every row's header
  // (Note [Row headers] in charter/formats/ggml_types.py).
  bool codecs(Span<CodecRow> table) {
    std::vector<std::uint64_t> starts;
    for (const CodecRow& row : table) {
      if (row.header.huge || row.header.mag) {
        for (const TensorEntry& t : v_.tensors) starts.push_back(t.start);
        std::sort(starts.begin(), starts.end());
        break;
      }
    }
    for (const TensorEntry& t : v_.tensors) {
      const CodecRow* g = nullptr;
      for (const CodecRow& row : table) {
        if (row.name == t.codec) g = &row;  // a dict: the last row of a name wins
      }
      if (!g) continue;
      Int row = v_.format == Format::Gguf ? t.shape[0] : (t.shape.empty() ? Int(1) : t.shape.back());
      const std::string field = "codecs." + std::string(t.codec);
      bool divides;
      if (g->block.neg || (!g->block.huge && g->block.mag == 0)) {
        divides = false;
      } else if (g->block.huge) {
        divides = !row.huge && row.mag == 0;
      } else {
        divides = row.mod(g->block.mag) == 0;
      }
      if (!divides) {
        return reject(r_, Code::CODEC_BLOCK, field + ".block",
                      std::string(t.name) + ": a " + std::string(t.codec) + " block of " + g->block.str() +
                          " elements does not divide the row width " + row.str(),
                      t.offset, g->block.str(), row.str(), g->at);
      }
      // elements = prod(shape): 0 if any dim is 0, else within u64 (the readers bound it)
      std::uint64_t elements = 1;
      bool zero = false, over = false;
      for (const Int& d : t.shape) zero = zero || (!d.huge && d.mag == 0);
      if (zero) {
        elements = 0;
      } else {
        for (const Int& d : t.shape) over = over || d.huge || mul_overflows(elements, d.mag, &elements);
      }
      const std::uint64_t extent = t.end - t.start;
      // rows * header + blocks * bytes; a row width of 0 (safetensors) has no rows
      const std::uint64_t rows = over || row.huge || row.mag == 0 ? 0 : elements / row.mag;
      const std::uint64_t per_row = g->block.huge || row.huge ? 0 : row.mag / g->block.mag;
      bool same;
      std::string want;
      std::uint64_t w = 0;
      if (over) {
        same = false;
        want = "> 2**64-1";
      } else {
        const std::uint64_t q = g->block.huge ? 0 : elements / g->block.mag;
        std::uint64_t headers = 0;
        if ((q && (g->bytes.neg || g->bytes.huge || mul_overflows(q, g->bytes.mag, &w))) ||
            (rows && (g->header.neg || g->header.huge || mul_overflows(rows, g->header.mag, &headers))) ||
            add_overflows(w, headers, &w)) {
          same = false;
          want = g->bytes.neg || g->header.neg ? "< 0" : "> 2**64-1";
        } else {
          same = w == extent;
          want = u64s(w);
        }
      }
      const bool header_differs = g->header.neg || g->header.huge || g->header.mag != t.row_header;
      if (!same && header_differs) {
        return reject(r_, Code::CODEC_ROW_HEADER, field + ".header",
                      std::string(t.name) + ": " + u64s(rows) + " rows of a " + g->header.str() + "-byte header and " +
                          u64s(per_row) + " " + std::string(t.codec) + " blocks of " + g->bytes.str() + " bytes are " +
                          want + " bytes, but the extent holds " + u64s(extent) + " (" + std::string(t.codec) +
                          " rows carry a " + u64s(t.row_header) + "-byte header)",
                      t.offset, g->header.str(), u64s(t.row_header), g->at);
      }
      if (!same) {
        return reject(r_, Code::CODEC_SIZE, field + ".bytes",
                      std::string(t.name) + ": " + std::string(t.codec) + " blocks of " + g->block.str() + "/" +
                          g->bytes.str() + " bytes are " + want + " bytes, but the extent holds " + u64s(extent),
                      t.offset, want, u64s(extent), g->at);
      }
      if (rows && g->header.mag) {  // the sizes agree: header and w are exact
        const auto next = std::upper_bound(starts.begin(), starts.end(), t.start);
        const std::uint64_t room = (next != starts.end() ? *next : v_.file_size) - t.start;
        if (w - rows * g->header.mag <= room && room < w) {
          return reject(r_, Code::CODEC_ROW_HEADER, field + ".header",
                        std::string(t.name) + ": " + u64s(rows) + " rows of " + u64s(w / rows) + " bytes (a " +
                            g->header.str() + "-byte header and " + u64s(per_row) + " blocks of " + g->bytes.str() +
                            ") need " + u64s(w) + " bytes, but the next extent starts " + u64s(room) +
                            " bytes after it: " + u64s(room / rows) + " bytes per row, a row header short",
                        t.offset, u64s(w / rows) + " bytes per row", u64s(room / rows) + " bytes per row", g->at);
        }
      }
    }
    return true;
  }

  // --- layout --------------------------------------------------------------------------------
  bool layout(bool has_alignment, const Int& alignment, bool sorted, bool packed, std::string_view trailing,
              const LayoutAt& at) {
    using u128 = unsigned __int128;
    const View& v = v_;
    u128 step = 1;
    if (has_alignment) {
      if (alignment.neg || (!alignment.huge && alignment.mag == 0)) {
        return internal("layout alignment must be positive", at.alignment);
      }
      const bool huge = alignment.huge;
      const std::uint64_t a = alignment.mag;
      // No tensors, no data section to align (Note [Tensor-less GGUF] in charter/formats/gguf.py).
      if (!v.tensors.empty() && (huge ? v.data_offset != 0 : v.data_offset % a != 0)) {
        return reject(r_, Code::LAYOUT_DATA_OFFSET, "layout.alignment",
                      "data section starts at " + u64s(v.data_offset) + ", not a multiple of " + alignment.str(),
                      std::nullopt, alignment.str(), u64s(v.data_offset), at.alignment);
      }
      for (const TensorEntry& t : v.tensors) {
        const std::uint64_t rel = t.start - v.data_offset;
        if (huge ? rel != 0 : rel % a != 0) {
          return reject(r_, Code::LAYOUT_ALIGNMENT, "tensors." + std::string(t.name) + ".offset",
                        std::string(t.name) + " starts at data offset " + u64s(rel) + ", not a multiple of " +
                            alignment.str(),
                        t.offset, alignment.str(), u64s(rel), at.alignment);
        }
      }
      step = huge ? (static_cast<u128>(1) << 64) : a;  // any step above every offset acts alike
    }
    for (const TensorEntry& t : v.tensors) {
      if (t.start < v.data_offset || t.end > v.file_size) {
        return reject(r_, Code::LAYOUT_BOUNDS, "tensors." + std::string(t.name) + ".offset",
                      std::string(t.name) + " spans [" + u64s(t.start) + ", " + u64s(t.end) +
                          "), outside the data section [" + u64s(v.data_offset) + ", " + u64s(v.file_size) + ")",
                      t.offset, "[" + u64s(v.data_offset) + ", " + u64s(v.file_size) + ")",
                      "[" + u64s(t.start) + ", " + u64s(t.end) + ")");
      }
    }
    if (sorted) {
      for (std::size_t i = 1; i < v.tensors.size(); ++i) {
        const TensorEntry& prev = v.tensors[i - 1];
        const TensorEntry& t = v.tensors[i];
        if (t.start < prev.start) {
          return reject(r_, Code::LAYOUT_ORDER, "tensors." + std::string(t.name) + ".offset",
                        std::string(t.name) + " starts at " + u64s(t.start) + ", before " + std::string(prev.name) +
                            " at " + u64s(prev.start) + " (layout.sorted)",
                        t.offset, ">= " + u64s(prev.start), u64s(t.start), at.sorted);
        }
      }
    }
    std::vector<const TensorEntry*> spans;
    spans.reserve(v.tensors.size());
    for (const TensorEntry& t : v.tensors) spans.push_back(&t);
    std::stable_sort(spans.begin(), spans.end(), [](const TensorEntry* a, const TensorEntry* b) {
      return a->start != b->start ? a->start < b->start : a->end < b->end;
    });
    for (std::size_t i = 1; i < spans.size(); ++i) {
      const TensorEntry& prev = *spans[i - 1];
      const TensorEntry& t = *spans[i];
      if (t.start < prev.end) {
        return reject(r_, Code::LAYOUT_OVERLAP, "tensors." + std::string(t.name) + ".offset",
                      std::string(t.name) + " overlaps " + std::string(prev.name), t.offset, ">= " + u64s(prev.end),
                      u64s(t.start), at.layout);
      }
    }
    auto align_up = [&](std::uint64_t n) -> u128 { return (static_cast<u128>(n) + step - 1) / step * step; };
    auto show128 = [](u128 x) {
      return x > UINT64_MAX ? std::string("> 2**64-1") : u64s(static_cast<std::uint64_t>(x));
    };
    if (packed) {
      std::uint64_t cursor = v.data_offset;
      for (const TensorEntry* tp : spans) {
        const TensorEntry& t = *tp;
        const u128 want = align_up(cursor);
        if (static_cast<u128>(t.start) != want) {  // the data section's start is aligned (checked above)
          return reject(r_, Code::LAYOUT_GAP, "tensors." + std::string(t.name) + ".offset",
                        std::string(t.name) + " starts at " + u64s(t.start) + "; packed layout puts it at " +
                            show128(want) + " (unowned bytes beyond alignment padding)",
                        t.offset, show128(want), u64s(t.start), at.packed);
        }
        cursor = t.end;
      }
    }
    const std::uint64_t end = spans.empty() ? v.data_offset : spans.back()->end;
    if (trailing == "reject" && v.file_size != end) {
      return reject(r_, Code::LAYOUT_TRAILING, "layout.trailing",
                    std::to_string(static_cast<long long>(v.file_size - end)) + " bytes after the last extent", end,
                    u64s(end), u64s(v.file_size), at.trailing);
    }
    if (trailing == "alignment" && static_cast<u128>(v.file_size) > align_up(end)) {
      return reject(r_, Code::LAYOUT_TRAILING, "layout.trailing",
                    u64s(v.file_size - end) + " bytes after the last extent, more than alignment padding", end,
                    show128(align_up(end)), u64s(v.file_size), at.trailing);
    }
    return true;
  }

  // --- payload -------------------------------------------------------------------------------
  // The payload stage streams the file; a C++ checker works over a header span and never reads
  // the file, so it only carries the facts (digests, padding, value rules) for a caller that can
  // stream: charter.engines.cpp runs the payload stage, values and bounds included, with the Python
  // runtime, which scans them with charter/values.hpp.
  bool payload(std::string_view file_sha256, Span<KeyAt> tensor_sha256, std::string_view padding,
               std::string_view at_file_sha256, std::string_view at_padding, Span<ValueRuleRow> values,
               Span<ValueBoundRow> bounds) {
    (void)file_sha256; (void)tensor_sha256; (void)padding; (void)at_file_sha256; (void)at_padding;
    (void)values; (void)bounds;
    return true;
  }

  // --- policy --------------------------------------------------------------------------------
  bool exclusions(Span<ExclusionRow> table) {
    for (const ExclusionRow& row : table) {
      if (!row.count_key.empty() && !share_.metadata_elsewhere) {
        const MetaEntry* e = entry(row.count_key);
        if (!e) return false;
        if (!py_equal(*e, row.source_count)) {
          return mismatch(Code::POLICY_EXCLUSION, "exclusions." + std::string(row.name) + ".source_count",
                          row.source_count.str(), show_entry(*e), row.at, e->value_offset(),
                          " (" + std::string(row.count_key) + ")");
        }
      }
      for (const TensorEntry& t : v_.tensors) {
        const std::vector<std::uint32_t> cps = code_points(t.name);
        for (const Glob& g : row.patterns) {
          if (glob_match(g, cps)) {
            return reject(r_, Code::POLICY_EXCLUSION, "exclusions." + std::string(row.name),
                          "tensor " + show_str(t.name) + " belongs to the excluded class " + show_str(row.name),
                          t.offset, std::string("absent"), std::string(t.name), row.at);
          }
        }
      }
    }
    return true;
  }

  bool status(std::string_view status_, std::string_view at) {
    if (require_.empty()) return true;
    const int have = status_index(status_), need = status_index(require_);
    if (have < 0 || need < 0) return internal("unknown status", at);
    if (have < need) {
      return reject(r_, Code::POLICY_STATUS, "status",
                    "the contract's status is " + show_str(status_) + "; --require-status " + std::string(require_) +
                        " refuses it",
                    std::nullopt, std::string(require_), std::string(status_), at);
    }
    return true;
  }

 private:
  bool mismatch(Code code, std::string field, std::string expected, std::string actual, std::string_view at,
                std::optional<std::uint64_t> offset, std::string note = {}) {
    std::string message = "expected " + expected + ", got " + actual + note;
    return reject(r_, code, std::move(field), std::move(message), offset, std::move(expected), std::move(actual), at);
  }

  bool internal(std::string message, std::string_view at) {
    return reject(r_, Code::INTERNAL, "internal", std::move(message), std::nullopt, std::nullopt, std::nullopt, at);
  }

  // Presence and type were established by the metadata stage; a contract that breaks that
  // precondition makes the Python runtime raise KeyError (INTERNAL here).
  const MetaEntry* entry(std::string_view key) {
    const MetaEntry* e = v_.find(key);
    if (!e) internal("key " + show_str(key) + " was not established by the metadata stage", {});
    return e;
  }

  // The sha256 of a string's text or an array's elements as stored.
  std::string value_sha256(const MetaEntry& e) const {
    if (reference_ != nullptr) {
      if (const std::string* known = reference_->digest_of(e)) return *known;
    }
    const std::string_view b = digested_bytes(e);
    return sha256_hex(reinterpret_cast<const unsigned char*>(b.data()), b.size());
  }

  const TensorEntry* tensor_named(std::string_view name) const {
    for (const TensorEntry& t : v_.tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }

  bool excluded(std::string_view name) const {
    if (!excluded_.size) return false;
    const std::vector<std::uint32_t> cps = code_points(name);
    for (const Glob& g : excluded_) {
      if (glob_match(g, cps)) return true;
    }
    return false;
  }

  // --- stores: reading the caller's regions, and the checks' shared steps ----------------------
  // Context.read: the `length` bytes at `offset` (from a passed region, else asked of the caller's
  // reader), or the short read's rejection.
  bool read(store::Num offset, store::Num length, const unsigned char** out) {
    static const unsigned char kNothing[1] = {0};
    if (!offset.ok || !length.ok) return internal("a store read out of range", {});
    store::u128 n = regions_.available(offset.v, length.v, out);
    if (n < length.v && regions_.can_ask(offset.v, length.v) && !regions_.ask(offset.v, length.v, out, &n)) {
      return internal("the caller's reader could not read " + store::u128s(length.v) + " bytes at offset " +
                      store::u128s(offset.v), {});
    }
    if (n < length.v) {
      const std::string ended = store::u128s(offset.v + n), wanted = store::u128s(offset.v + length.v);
      const std::uint64_t at = offset.v > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(offset.v);
      return reject(r_, Code::STORE_GEOMETRY, "file", "file ended at " + ended + ", before " + wanted, at, wanted,
                    ended);
    }
    if (length.v == 0 || *out == nullptr) *out = kNothing;
    return true;
  }

  // stores._extent: the tensor that holds the store, at least `need` bytes long.
  bool store_extent(const StoreFacts& s, const std::string& pre, std::uint64_t need, const TensorEntry** out) {
    const TensorEntry* t = tensor_named(s.tensor);
    const std::uint64_t have = t ? t->end - t->start : 0;
    if (!t || have < need) {
      return reject(r_, Code::STORE_GEOMETRY, pre + ".size",
                    std::string(s.tensor) + " holds " + u64s(have) + " bytes, fewer than the " + u64s(need) +
                        "-byte manifest",
                    t ? std::optional<std::uint64_t>(t->start) : std::nullopt, ">= " + u64s(need), u64s(have), s.at);
    }
    *out = t;
    return true;
  }

  // stores._bounded: a table [start, start + length) of the store fits its extent and the cap.
  bool store_bounded(const std::string& pre, const TensorEntry& t, store::Num start, store::Num length,
                     std::string_view what, std::string_view at) {
    const std::uint64_t extent = t.end - t.start;
    const store::Num end = start + length;
    if (!end.ok) return internal("a store table out of range", at);
    if (length.v > store::kMaxTableBytes || end.v > extent) {
      return reject(r_, Code::STORE_GEOMETRY, pre + "." + std::string(what),
                    "the " + std::string(what) + " [" + store::u128s(start.v) + ", " + store::u128s(end.v) +
                        ") does not fit in " + u64s(extent) + " bytes (or exceeds " + u64s(store::kMaxTableBytes) + ")",
                    t.start, "<= " + u64s(extent), store::u128s(end.v), at);
    }
    return true;
  }

  // stores._fields, one field: the record's `name` (read at `base` + its offset) equals `value`.
  bool store_field(const unsigned char* record, const store::Layout& layout, std::uint64_t base, Code code,
                   const std::string& prefix, std::string_view name, store::Num value, std::string_view at) {
    const store::Field* f = layout.find(name);
    if (!f) return internal("the " + std::string(layout.name) + " has no field " + show_str(name), at);
    const std::string expected = value.ok ? store::u128s(value.v) : std::string("<out of range>");
    if (f->bytes) {  // bytes never equal an int
      return mismatch(code, prefix + std::string(name), expected,
                      show_bytes(std::string_view(reinterpret_cast<const char*>(record + f->offset), f->width)), at,
                      base + f->offset);
    }
    const std::uint64_t actual = store::load(record, *f);
    if (!value.ok || value.v != actual) {
      return mismatch(code, prefix + std::string(name), expected, u64s(actual), at, base + f->offset);
    }
    return true;
  }

  // `want[field]` of the Python stage (a dict of the contract's fields: the last one of a name).
  bool want(const StoreFacts& s, std::string_view field, store::Num* out) {
    const StoreField* found = nullptr;
    for (const StoreField& f : s.fields) {
      if (f.name == field) found = &f;
    }
    if (!found) return internal("store " + show_str(s.name) + " states no " + show_str(field), s.at);
    *out = store::num(found->value);
    return true;
  }

  bool store_digest(Sha256& h, const unsigned char* stated, const std::string& pre, std::string_view at,
                    std::uint64_t offset) {
    const auto digest = h.digest();
    if (std::memcmp(digest.data(), stated, digest.size()) != 0) {
      return mismatch(Code::STORE_DIGEST, pre + ".manifest.sha256", show_str(hex(digest.data(), digest.size())),
                      show_str(hex(stated, digest.size())), at, offset);
    }
    return true;
  }

  static std::string hex(const unsigned char* p, std::size_t n) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s(2 * n, '0');
    for (std::size_t i = 0; i < n; ++i) {
      s[2 * i] = kHex[p[i] >> 4];
      s[2 * i + 1] = kHex[p[i] & 15];
    }
    return s;
  }

  // Python's repr() of bytes, enough for messages.
  static std::string show_bytes(std::string_view b) {
    std::string out = "b'";
    for (const char ch : b) {
      const unsigned char c = static_cast<unsigned char>(ch);
      if (c == '\\' || c == '\'') {
        out += '\\';
        out += ch;
      } else if (c < 0x20 || c >= 0x7F) {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      } else {
        out += ch;
      }
    }
    return out + "'";
  }

  // expertmajor.name_of: trailing NULs stripped, decoded as ASCII with U+FFFD for any other byte.
  static std::string ascii_name(const unsigned char* p, std::size_t n) {
    while (n && p[n - 1] == 0) --n;
    std::string out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (p[i] < 0x80) {
        out += static_cast<char>(p[i]);
      } else {
        out += "\xEF\xBF\xBD";
      }
    }
    return out;
  }

  // Python's value of a scalar entry, as the kinds the comparisons need.
  static std::int64_t load_signed(const MetaEntry& e) {
    switch (e.type) {
      case VType::I8: return static_cast<std::int8_t>(e.scalar[0]);
      case VType::I16: return static_cast<std::int16_t>(static_cast<std::uint16_t>(e.scalar[0] | e.scalar[1] << 8));
      case VType::I32: return static_cast<std::int32_t>(load_u32(e.scalar));
      default: return static_cast<std::int64_t>(load_u64(e.scalar));
    }
  }

  static Int int_of(const MetaEntry& e) {
    switch (e.type) {
      case VType::U8: case VType::Bool: return Int(e.scalar[0]);
      case VType::U16: return Int(static_cast<std::uint64_t>(e.scalar[0] | e.scalar[1] << 8));
      case VType::U32: return Int(load_u32(e.scalar));
      case VType::U64: return Int(load_u64(e.scalar));
      default: {
        const std::int64_t s = load_signed(e);
        return s < 0 ? Int::negative(0 - static_cast<std::uint64_t>(s)) : Int(static_cast<std::uint64_t>(s));
      }
    }
  }

  static double double_of(const MetaEntry& e) {
    if (e.type == VType::F32) {
      float f;
      std::memcpy(&f, e.scalar, 4);
      return f;
    }
    double d;
    std::uint64_t b = load_u64(e.scalar);
    std::memcpy(&d, &b, 8);
    return d;
  }

  // The bits of `actual` as a float32 or float64 field, as runtime.py's _same_bits computes them. A
  // stored float32 is its own bits: a NaN keeps its quiet bit and payload (Note [Float bits]).
  bool float_bits(const MetaEntry& e, bool f32, std::uint64_t* out) {
    if (e.type != VType::F32 && e.type != VType::F64) return internal("float comparison of a non-float value", {});
    if (f32 && e.type == VType::F32) {
      *out = load_u32(e.scalar);
      return true;
    }
    volatile double d = double_of(e);  // volatile: keep the float -> double -> float round trip
    if (!f32) {
      double x = d;
      std::memcpy(out, &x, 8);
      return true;
    }
    volatile float g = static_cast<float>(d);
    float y = g;
    const double back = d;
    if (__builtin_isinf(y) && !__builtin_isinf(back)) return internal("float32 overflow", {});
    std::uint32_t b{};
    std::memcpy(&b, &y, 4);
    *out = b;
    return true;
  }

  // `actual == expected and type(actual) is type(expected)`
  static bool typed_equal(const MetaEntry& e, const Lit& l) {
    switch (l.kind) {
      case Lit::Kind::Int: return vtype_is_int(e.type) && int_of(e) == l.i;
      case Lit::Kind::Bool: return e.type == VType::Bool && (e.scalar[0] != 0) == l.b;
      case Lit::Kind::Float: return (e.type == VType::F32 || e.type == VType::F64) && double_of(e) == l.f;
      case Lit::Kind::Str: return e.type == VType::Str && e.str == l.s;
    }
    return false;
  }

  // `actual == value` for an int value (bool and float compare numerically, as in Python)
  static bool py_equal(const MetaEntry& e, const Int& value) {
    if (vtype_is_int(e.type) || e.type == VType::Bool) return int_of(e) == value;
    if (e.type == VType::F32 || e.type == VType::F64) {
      const double d = double_of(e);
      if (value.huge || !(d == d) || d >= 18446744073709551616.0 || d <= -18446744073709551616.0) return false;
      if (d != __builtin_trunc(d)) return false;
      const bool neg = d < 0;
      const std::uint64_t mag = static_cast<std::uint64_t>(neg ? -d : d);
      return (neg ? Int::negative(mag) : Int(mag)) == value;
    }
    return false;
  }

  static std::string show_lit(const Lit& l) {
    switch (l.kind) {
      case Lit::Kind::Int: return l.i.str();
      case Lit::Kind::Bool: return l.b ? "true" : "false";
      case Lit::Kind::Float: return std::to_string(l.f);
      case Lit::Kind::Str: return show_str(l.s);
    }
    return "?";
  }

  static std::string show_json(const json::Node& n) {
    switch (n.kind) {
      case json::Kind::True: return "true";
      case json::Kind::False: return "false";
      case json::Kind::Int: return n.num().str();
      case json::Kind::Float: return std::string(n.s);
      case json::Kind::Str: return show_str(n.s);
      default: return std::string(companion::type_name(n.kind));
    }
  }

  static std::string show_entry(const MetaEntry& e) {
    if (vtype_is_int(e.type)) return int_of(e).str();
    switch (e.type) {
      case VType::Bool: return e.scalar[0] ? "true" : "false";
      case VType::F32: case VType::F64: return std::to_string(double_of(e));
      case VType::Str: return show_str(e.str);
      case VType::Array: return "<array of " + u64s(e.count) + ">";
      default: return "?";
    }
  }

  const View& v_;
  Report& r_;
  std::string_view require_;
  store::Regions regions_;
  Companion companion_;
  Share share_;
  const Reference* reference_;
  std::unordered_set<std::string_view> only_;  // share_.only, for lookups

  // Whether this file is where `tensor` is checked: any file alone, one shard of a bundle.
  bool holds(std::string_view tensor) const { return !share_.has_only || only_.count(tensor) > 0; }
  Span<Glob> excluded_{};
};

}  // namespace charter::rt
