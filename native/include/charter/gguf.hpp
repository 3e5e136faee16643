// Strict, header-only GGUF walker (versions 2 and 3, little-endian): the C++ mirror of
// charter/formats/gguf.py. Same checks in the same order, same codes, fields and byte offsets;
// see that module's docstring for the policies. Nothing is allocated from a count before the
// count is bounded by the bytes that remain; tensor bytes are never read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "charter/checked.hpp"
#include "charter/fail.hpp"
#include "charter/report.hpp"
#include "charter/utf8.hpp"
#include "charter/view.hpp"

namespace charter::rt::gguf {

inline constexpr std::uint64_t kDefaultAlignment = 32;
inline constexpr std::uint64_t kMaxAlignment = 1ull << 30;
inline constexpr std::uint64_t kMaxNameBytes = 63;
inline constexpr std::uint32_t kMaxDims = 4;
inline constexpr std::uint64_t kMaxHeaderBytes = 64ull << 20;
// Count limits (Note [Reader limits] in charter/formats/gguf.py): CONTAINER_COUNT past them.
inline constexpr std::uint64_t kMaxKvCount = 1ull << 16;
inline constexpr std::uint64_t kMaxTensorCount = 1ull << 17;
inline constexpr std::uint64_t kMaxStringElements = 1ull << 20;  // in all string arrays together
inline constexpr std::uint64_t kI64Max = (1ull << 63) - 1;
inline constexpr std::uint64_t kMinKv = 8 + 1 + 4 + 1;
inline constexpr std::uint64_t kMinTensorInfo = 8 + 1 + 4 + 8 + 4 + 8;

struct GgmlType {
  std::uint32_t id{};
  std::string_view name;
  std::uint64_t block_size{};
  std::uint64_t block_bytes{};
  std::uint64_t row_header{};  // bytes in front of every row (Note [Row headers] in charter/formats/ggml_types.py)
};

// charter/formats/ggml_types.py, row for row (a test compares the two tables).
inline constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4},          {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},       {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},     {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},    {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},         {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},        {34, "TQ1_0", 256, 54},    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36},     {41, "Q1_0", 128, 18},
    // ik_llama.cpp's types with a row header (Note [Row headers])
    {134, "IQ1_BN", 64, 13, 2},   {135, "IQ2_BN", 64, 16, 4},   {144, "IQ4_KS", 256, 136, 4},
    {145, "IQ2_KS", 256, 70, 2},  {146, "IQ4_KSS", 256, 128, 4}, {152, "IQ5_KS", 256, 168, 4},
    {153, "IQ2_KT", 256, 68, 4},  {154, "IQ3_KT", 256, 100, 4}, {155, "IQ4_KT", 256, 128, 4},
    {156, "IQ3_KS", 256, 102, 2}, {157, "IQ2_KL", 256, 86, 2},  {158, "IQ1_KT", 256, 56, 4},
};

inline const GgmlType* ggml_type(std::uint32_t id) {
  for (const auto& t : kGgmlTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

inline std::string_view removed_ggml_type(std::uint32_t id) {
  switch (id) {
    case 4: return "Q4_2";
    case 5: return "Q4_3";
    case 31: return "Q4_0_4_4";
    case 32: return "Q4_0_4_8";
    case 33: return "Q4_0_8_8";
    case 36: return "IQ4_NL_4_4";
    case 37: return "IQ4_NL_4_8";
    case 38: return "IQ4_NL_8_8";
    default: return {};
  }
}

// Bounds-checked reads (formats/gguf.py `_Cursor`): `end` is the first byte we may not read.
class Cursor {
 public:
  Cursor(const unsigned char* buf, std::uint64_t len, std::uint64_t file_size, std::uint64_t cap, Report& r)
      : buf_(buf), len_(len), file_size_(file_size), cap_(cap), r_(r) {
    end_ = len < file_size ? len : file_size;
    end_ = end_ < cap ? end_ : cap;
  }

  std::uint64_t pos = 0;
  std::uint64_t strings_left = kMaxStringElements;  // string elements the limit still allows
  const unsigned char* buf() const { return buf_; }
  std::uint64_t end() const { return end_; }
  std::uint64_t file_size() const { return file_size_; }
  Report& report() { return r_; }

  // A read of `n` bytes at `pos` that does not fit: the file is short (`code`), the header cap is
  // passed, or only the provided span is short (then `needs_more` tells the caller to retry).
  template <class F, class W>
  bool short_read(std::uint64_t n, F&& field, W&& what, Code code = Code::CONTAINER_TRUNCATED) {
    std::uint64_t need{};
    const bool overflow = add_overflows(pos, n, &need);
    if (overflow || need > file_size_) {
      const std::uint64_t left = file_size_ > pos ? file_size_ - pos : 0;
      return reject(r_, code, field(),
                    std::string(what()) + " needs " + u64s(n) + " bytes at offset " + u64s(pos) + ", only " +
                        u64s(left) + " remain",
                    pos, "<= " + u64s(left) + " bytes", u64s(n) + " bytes");
    }
    if (need > cap_) {
      return reject(r_, Code::CONTAINER_HEADER, field(),
                    std::string(what()) + " would extend the header past the " + u64s(cap_) + "-byte limit", pos,
                    "header <= " + u64s(cap_) + " bytes", "ends at " + u64s(need));
    }
    r_.needs_more = true;
    r_.need = need;
    return reject(r_, Code::CONTAINER_TRUNCATED, field(),
                  std::string(what()) + " lies past the " + u64s(len_) + " bytes of the file that were provided",
                  pos);
  }

  template <class F, class W>
  bool take(std::uint64_t n, std::uint64_t* start, F&& field, W&& what) {
    if (n > end_ - pos) return short_read(n, field, what);
    *start = pos;
    pos += n;
    return true;
  }

  template <class F, class W>
  bool u32(std::uint32_t* v, F&& field, W&& what) {
    std::uint64_t at{};
    if (!take(4, &at, field, what)) return false;
    *v = load_u32(buf_ + at);
    return true;
  }

  template <class F, class W>
  bool u64(std::uint64_t* v, F&& field, W&& what) {
    std::uint64_t at{};
    if (!take(8, &at, field, what)) return false;
    *v = load_u64(buf_ + at);
    return true;
  }

  // A gguf string: u64 length, then bytes that must be UTF-8 (`code` if not).
  template <class F, class W>
  bool string(std::string_view* out, F&& field, W&& what, Code code) {
    std::uint64_t n{};
    if (!u64(&n, field, [&] { return std::string(what()) + " length"; })) return false;
    std::uint64_t start{};
    if (!take(n, &start, field, what)) return false;
    const std::size_t bad = utf8_error(buf_ + start, n);
    if (bad != n) {
      return reject(r_, code, field(), std::string(what()) + " is not valid UTF-8", start + bad);
    }
    *out = std::string_view(reinterpret_cast<const char*>(buf_ + start), n);
    return true;
  }

 private:
  const unsigned char* buf_;
  std::uint64_t len_{}, file_size_{}, cap_{}, end_{};
  Report& r_;
};

namespace detail {

inline std::string cat(std::string_view a, std::string_view b) {
  std::string s;
  s.reserve(a.size() + b.size());
  s.append(a);
  s.append(b);
  return s;
}

inline bool value_type(Cursor& c, std::uint32_t tag, VType* out, const std::string& field, std::uint64_t at) {
  if (tag > 12) {
    return reject(c.report(), Code::CONTAINER_VALUE_TYPE, field, "unknown value type " + u64s(tag), at, "0..12",
                  u64s(tag));
  }
  *out = static_cast<VType>(tag);
  return true;
}

CHARTER_HOT_BEGIN  // Note [Hot kernels at -O0] (charter/hot.hpp): the loop over a vocabulary
inline bool read_array(Cursor& c, MetaEntry& e, const std::string& field) {
  Report& r = c.report();
  const std::uint64_t at = c.pos;
  auto fld = [&] { return field; };
  std::uint32_t tag{};
  if (!c.u32(&tag, fld, [] { return "array element type"; })) return false;
  VType et{};
  if (!value_type(c, tag, &et, field, at)) return false;
  if (et == VType::Array) {
    return reject(r, Code::CONTAINER_ARRAY, field, "arrays of arrays are not supported", at,
                  "a scalar or string element type", "array");
  }
  std::uint64_t count{};
  if (!c.u64(&count, fld, [] { return "array count"; })) return false;
  const std::uint64_t size = vtype_size(et);
  std::uint64_t need{};
  const bool ovf = mul_overflows(count, size, &need);
  if (ovf || need > c.end() - c.pos) {
    return c.short_read(
        ovf ? UINT64_MAX : need, fld,
        [&] { return u64s(count) + " " + std::string(vtype_name(et)) + " elements (at least " + u64s(size) +
                     " bytes each)"; },
        Code::CONTAINER_COUNT);
  }
  if (et == VType::Str && count > c.strings_left) {
    return reject(r, Code::CONTAINER_COUNT, field,
                  u64s(count) + " string elements are more than the " + u64s(c.strings_left) +
                      " left of the reader's limit on string elements in all arrays",
                  at + 4, "<= " + u64s(c.strings_left), u64s(count));
  }
  const std::uint64_t start = c.pos;
  if (et == VType::Str) {
    // Bounds first for every element (`_walk_strings`), then UTF-8 of the elements. Fast path: a
    // run of elements whose length prefixes are all ASCII bytes is validated as one region (no
    // sequence can cross an ASCII byte, so the run is valid iff each element is); a prefix with a
    // byte >= 0x80 (a length >= 128) splits the runs. On an error the elements are validated one
    // by one to name the first bad one, as `_check_utf8` does.
    std::vector<std::uint64_t> split;  // prefixes holding a byte >= 0x80 (few: long strings)
    // The common case, unchecked by name: every element fits. Any doubt falls through to the
    // checked walk below, which names the element and decides the diagnostic.
    bool walked = false;
    {
      const unsigned char* b = c.buf();
      const std::uint64_t end = c.end();
      std::uint64_t p = start, j = 0;
      for (; j < count; ++j) {
        if (end - p < 8) break;
        const std::uint64_t n = load_u64(b + p);
        if (n > end - p - 8) break;
        if (n & 0x8080808080808080ull) split.push_back(p);
        p += 8 + n;
      }
      if (j == count) {
        c.pos = p;
        walked = true;
      } else {
        split.clear();
      }
    }
    for (std::uint64_t j = 0; !walked && j < count; ++j) {
      auto efld = [&] { return field + "[" + u64s(j) + "]"; };
      const std::uint64_t at = c.pos;
      std::uint64_t n{};
      if (!c.u64(&n, efld, [] { return "string element length"; })) return false;
      if (n & 0x8080808080808080ull) split.push_back(at);
      std::uint64_t s{};
      if (!c.take(n, &s, efld, [] { return "string element"; })) return false;
    }
    bool valid = true;
    std::uint64_t seg = start;
    for (std::size_t k = 0; k <= split.size() && valid; ++k) {
      const std::uint64_t stop = k < split.size() ? split[k] : c.pos;
      valid = utf8_error(c.buf() + seg, stop - seg) == stop - seg;
      if (k < split.size()) seg = split[k] + 8;
    }
    if (!valid) {
      std::uint64_t p = start;
      for (std::uint64_t j = 0; j < count; ++j) {
        const std::uint64_t n = load_u64(c.buf() + p);
        const std::size_t k = utf8_error(c.buf() + p + 8, n);
        if (k != n) {
          return reject(r, Code::CONTAINER_STRING, field + "[" + u64s(j) + "]", "string element is not valid UTF-8",
                        p + 8 + k);
        }
        p += 8 + n;
      }
    }
  } else {
    c.pos = start + need;
  }
  const std::uint64_t stop = c.pos;
  if (et == VType::Str) c.strings_left -= count;
  if (et == VType::Bool) {
    for (std::uint64_t j = 0; j < count; ++j) {
      const unsigned char b = c.buf()[start + j];
      if (b > 1) {
        return reject(r, Code::CONTAINER_BOOL, field + "[" + u64s(j) + "]", "bool byte must be 0 or 1, got " + u64s(b),
                      start + j, "0 or 1", u64s(b));
      }
    }
  }
  e.element = et;
  e.count = count;
  e.raw = std::string_view(reinterpret_cast<const char*>(c.buf() + start), stop - start);
  return true;
}
CHARTER_HOT_END

inline bool read_scalar(Cursor& c, MetaEntry& e, const std::string& field) {
  auto fld = [&] { return field; };
  if (e.type == VType::Str) {
    return c.string(&e.str, fld, [] { return "string value"; }, Code::CONTAINER_STRING);
  }
  std::uint64_t at{};
  if (!c.take(vtype_size(e.type), &at, fld, [&] { return std::string(vtype_name(e.type)) + " value"; })) return false;
  e.scalar = c.buf() + at;
  if (e.type == VType::Bool && *e.scalar > 1) {
    return reject(c.report(), Code::CONTAINER_BOOL, field, "bool byte must be 0 or 1, got " + u64s(*e.scalar), at,
                  "0 or 1", u64s(*e.scalar));
  }
  return true;
}

struct RawTensor {
  std::uint64_t dims_count{};
  const GgmlType* type;
  std::uint64_t offset{};
  std::uint64_t nbytes{};
  std::uint64_t off_at{};
};

}  // namespace detail

// Where the data section starts (formats/gguf.py `data_offset`, Note [Tensor-less GGUF]): the
// header end rounded up to the alignment, or, in a file that declares no tensors, the header end
// itself. `header_end` is at most the header cap, so the sum cannot overflow.
inline std::uint64_t data_offset(std::uint64_t header_end, std::uint64_t alignment, std::uint64_t tensor_count) {
  if (tensor_count == 0) return header_end;
  return (header_end + alignment - 1) / alignment * alignment;
}

// Parse the GGUF header in [buf, buf+len) of a file of `file_size` bytes into `v`
// (formats/gguf.py `parse_gguf`). On failure the report holds the one CONTAINER_* diagnostic.
inline bool parse(const unsigned char* buf, std::uint64_t len, std::uint64_t file_size, View& v, Report& r,
                  std::uint64_t max_header_bytes = kMaxHeaderBytes) {
  using detail::cat;
  Cursor c(buf, len, file_size, max_header_bytes, r);
  v.format = Format::Gguf;
  v.file_size = file_size;
  // magic
  {
    const std::uint64_t head = c.end() < 4 ? c.end() : 4;
    static constexpr unsigned char kMagic[4] = {'G', 'G', 'U', 'F'};
    bool prefix = true;
    for (std::uint64_t i = 0; i < head; ++i) prefix = prefix && buf[i] == kMagic[i];
    if (head == 4 && prefix) {
      c.pos = 4;
    } else {
      if (head < 4 && prefix) {
        if (!c.short_read(4, [] { return std::string("header.magic"); }, [] { return "magic"; })) return false;
      }
      static constexpr char kHex[] = "0123456789abcdef";
      std::string got;
      for (std::uint64_t i = 0; i < head; ++i) {
        got += kHex[buf[i] >> 4];
        got += kHex[buf[i] & 15];
      }
      return reject(r, Code::CONTAINER_MAGIC, "header.magic", "not a GGUF file", 0, "47475546", got);
    }
  }
  std::uint32_t version{};
  if (!c.u32(&version, [] { return std::string("header.version"); }, [] { return "version"; })) return false;
  if (version != 2 && version != 3) {
    const std::uint32_t swapped = __builtin_bswap32(version);
    if ((version & 0xFFFF) == 0 && swapped >= 1 && swapped <= 3) {
      return reject(r, Code::CONTAINER_VERSION, "header.version",
                    "version is version " + u64s(swapped) + " byte-swapped: big-endian GGUF is not supported", 4,
                    "2 or 3 (little-endian)", u64s(version));
    }
    return reject(r, Code::CONTAINER_VERSION, "header.version", "unsupported GGUF version " + u64s(version), 4,
                  "2 or 3", u64s(version));
  }
  v.has_version = true;
  v.version = version;
  std::uint64_t tensor_count{}, kv_count{};
  if (!c.u64(&tensor_count, [] { return std::string("header.tensor_count"); }, [] { return "tensor count"; }))
    return false;
  if (!c.u64(&kv_count, [] { return std::string("header.kv_count"); }, [] { return "kv count"; })) return false;
  std::uint64_t left = file_size - c.pos;  // the fixed header fit, so file_size >= pos
  std::uint64_t tmin{};
  if (mul_overflows(tensor_count, kMinTensorInfo, &tmin) || tmin > left) {
    return reject(r, Code::CONTAINER_COUNT, "header.tensor_count",
                  u64s(tensor_count) + " tensor infos cannot fit in the " + u64s(left) + " bytes that remain", 8,
                  "<= " + u64s(left / kMinTensorInfo), u64s(tensor_count));
  }
  left -= tmin;
  std::uint64_t kmin{};
  if (mul_overflows(kv_count, kMinKv, &kmin) || kmin > left) {
    return reject(r, Code::CONTAINER_COUNT, "header.kv_count",
                  u64s(kv_count) + " kv pairs cannot fit in the " + u64s(left) + " bytes left after the tensor infos",
                  16, "<= " + u64s(left / kMinKv), u64s(kv_count));
  }
  if (tensor_count > kMaxTensorCount) {
    return reject(r, Code::CONTAINER_COUNT, "header.tensor_count",
                  u64s(tensor_count) + " tensor infos are more than the reader's limit of " + u64s(kMaxTensorCount), 8,
                  "<= " + u64s(kMaxTensorCount), u64s(tensor_count));
  }
  if (kv_count > kMaxKvCount) {
    return reject(r, Code::CONTAINER_COUNT, "header.kv_count",
                  u64s(kv_count) + " kv pairs are more than the reader's limit of " + u64s(kMaxKvCount), 16,
                  "<= " + u64s(kMaxKvCount), u64s(kv_count));
  }
  // kv pairs (counts are bounded by the file size now)
  // Reservations are capped: a count bounded by a large file is still no reason to allocate.
  v.meta.reserve(kv_count < 1024 ? kv_count : 1024);
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    const std::uint64_t start = c.pos;
    auto kfld = [&] { return "kv[" + u64s(i) + "].key"; };
    MetaEntry e;
    if (!c.string(&e.key, kfld, [] { return "key"; }, Code::CONTAINER_KEY)) return false;
    if (e.key.empty()) return reject(r, Code::CONTAINER_KEY, kfld(), "empty key", start);
    if (const MetaEntry* first = v.find(e.key)) {
      return reject(r, Code::CONTAINER_DUPLICATE_KEY, kfld(),
                    "key " + show_str(e.key) + " already defined at offset " + u64s(first->offset), start);
    }
    const std::string field = cat("metadata.", e.key);
    auto fld = [&] { return field; };
    e.offset = start;
    e.gguf = true;
    std::uint32_t tag{};
    if (!c.u32(&tag, fld, [] { return "value type"; })) return false;
    if (!detail::value_type(c, tag, &e.type, field, e.type_offset())) return false;
    if (e.type == VType::Array) {
      if (!detail::read_array(c, e, field)) return false;
    } else if (!detail::read_scalar(c, e, field)) {
      return false;
    }
    v.add_meta(e);
  }
  // alignment
  std::uint64_t alignment = kDefaultAlignment;
  if (const MetaEntry* a = v.find("general.alignment")) {
    if (a->type != VType::U32) {
      return reject(r, Code::CONTAINER_ALIGNMENT, "metadata.general.alignment", "alignment must be a uint32", a->type_offset(),
                    "uint32", std::string(vtype_name(a->type)));
    }
    const std::uint64_t x = load_u32(a->scalar);
    if (x == 0 || (x & (x - 1)) || x > kMaxAlignment) {
      return reject(r, Code::CONTAINER_ALIGNMENT, "metadata.general.alignment",
                    "alignment must be a power of two in [1, " + u64s(kMaxAlignment) + "], got " + u64s(x),
                    a->value_offset(), "power of two <= " + u64s(kMaxAlignment), u64s(x));
    }
    alignment = x;
  }
  v.has_alignment = true;
  v.alignment = alignment;
  // tensor infos: each record's own fields; offsets wait until the data start is known
  std::vector<detail::RawTensor> raw;
  const std::uint64_t reserve = tensor_count < 4096 ? tensor_count : 4096;
  raw.reserve(reserve);
  v.tensors.reserve(reserve);
  KeyIndex seen;  // name -> position in v.tensors
  const auto name_of = [&v](std::size_t k) { return v.tensors[k].name; };
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    const std::uint64_t start = c.pos;
    auto nfld = [&] { return "tensors[" + u64s(i) + "].name"; };
    TensorEntry t;
    if (!c.string(&t.name, nfld, [] { return "tensor name"; }, Code::CONTAINER_TENSOR_NAME)) return false;
    if (t.name.empty() || t.name.size() > kMaxNameBytes) {
      return reject(r, Code::CONTAINER_TENSOR_NAME, nfld(),
                    "tensor name must be 1.." + u64s(kMaxNameBytes) + " bytes, got " + u64s(t.name.size()), start,
                    "1.." + u64s(kMaxNameBytes) + " bytes", u64s(t.name.size()));
    }
    if (const auto dup = seen.find(t.name, name_of)) {
      return reject(r, Code::CONTAINER_TENSOR_NAME, nfld(),
                    "duplicate tensor name " + show_str(t.name) + " (first at offset " + u64s(v.tensors[*dup].offset) +
                        ")",
                    start);
    }
    const std::string field = cat("tensors.", t.name);
    const std::uint64_t rank_at = c.pos;
    std::uint32_t n_dims{};
    if (!c.u32(&n_dims, [&] { return field + ".n_dims"; }, [] { return "n_dims"; })) return false;
    if (n_dims < 1 || n_dims > kMaxDims) {
      return reject(r, Code::CONTAINER_TENSOR_RANK, field + ".n_dims",
                    "rank must be 1.." + u64s(kMaxDims) + ", got " + u64s(n_dims), rank_at, "1.." + u64s(kMaxDims),
                    u64s(n_dims));
    }
    std::uint64_t n_elements = 1;
    t.dims_first = v.dims.size();
    for (std::uint32_t k = 0; k < n_dims; ++k) {
      const std::uint64_t at = c.pos;
      std::uint64_t d{};
      if (!c.u64(&d, [&] { return field + ".dims"; }, [&] { return "dim " + u64s(k); })) return false;
      if (d < 1 || d > kI64Max) {
        return reject(r, Code::CONTAINER_TENSOR_DIM, field + ".dims",
                      "dim " + u64s(k) + " must be in [1, 2**63-1], got " + u64s(d), at, "1..2**63-1", u64s(d));
      }
      v.dims.emplace_back(d);
      std::uint64_t prod{};
      if (mul_overflows(n_elements, d, &prod) || prod > kI64Max) {
        return reject(r, Code::CONTAINER_OVERFLOW, field + ".dims", "element count of the dims exceeds 2**63-1", at,
                      "<= 2**63-1", std::nullopt);
      }
      n_elements = prod;
    }
    const std::uint64_t type_at = c.pos;
    std::uint32_t type_id{};
    if (!c.u32(&type_id, [&] { return field + ".type"; }, [] { return "ggml type"; })) return false;
    const GgmlType* gt = ggml_type(type_id);
    if (!gt) {
      const std::string_view removed = removed_ggml_type(type_id);
      return reject(r, Code::CONTAINER_TENSOR_TYPE, field + ".type",
                    removed.empty() ? "unknown ggml type " + u64s(type_id)
                                    : "removed ggml type " + u64s(type_id) + " (" + std::string(removed) + ")",
                    type_at, "a known ggml type", u64s(type_id));
    }
    const std::uint64_t ne0 = v.dims[t.dims_first].mag;
    if (ne0 % gt->block_size) {
      return reject(r, Code::CONTAINER_TENSOR_BLOCK, field + ".dims",
                    "ne[0]=" + u64s(ne0) + " is not a multiple of " + std::string(gt->name) + "'s block size " +
                        u64s(gt->block_size),
                    rank_at + 4, "multiple of " + u64s(gt->block_size), u64s(ne0));
    }
    // rows * row_header + blocks * block_bytes (ggml_row_size times the rows)
    std::uint64_t nbytes{}, headers{};
    if (mul_overflows(n_elements / gt->block_size, gt->block_bytes, &nbytes) ||
        mul_overflows(n_elements / ne0, gt->row_header, &headers) || add_overflows(nbytes, headers, &nbytes)) {
      return reject(r, Code::CONTAINER_OVERFLOW, field + ".dims", "byte size exceeds 2**64-1", rank_at + 4,
                    "<= 2**64-1", std::nullopt);
    }
    const std::uint64_t off_at = c.pos;
    std::uint64_t offset{};
    if (!c.u64(&offset, [&] { return field + ".offset"; }, [] { return "data offset"; })) return false;
    t.codec = gt->name;
    t.row_header = gt->row_header;
    t.offset = start;
    raw.push_back({n_dims, gt, offset, nbytes, off_at});
    v.tensors.push_back(std::move(t));
    seen.insert(v.tensors.back().name, v.tensors.size() - 1, name_of);
  }
  v.bind_shapes();
  v.header_end = c.pos;
  v.data_offset = data_offset(c.pos, alignment, tensor_count);
  for (std::size_t i = 0; i < v.tensors.size(); ++i) {
    TensorEntry& t = v.tensors[i];
    const detail::RawTensor& rt = raw[i];
    const auto field = [&] { return cat(cat("tensors.", t.name), ".offset"); };  // on failure only
    if (rt.offset % alignment) {
      return reject(r, Code::CONTAINER_OFFSET, field(),
                    "offset " + u64s(rt.offset) + " is not a multiple of the alignment " + u64s(alignment), rt.off_at,
                    "multiple of " + u64s(alignment), u64s(rt.offset));
    }
    std::uint64_t begin{}, end{};
    if (add_overflows(v.data_offset, rt.offset, &begin) || add_overflows(begin, rt.nbytes, &end) || end > file_size) {
      return reject(r, Code::CONTAINER_EXTENT, field(), "data ends past the end of the file (" + u64s(file_size) + ")",
                    rt.off_at, "end <= " + u64s(file_size), std::nullopt);
    }
    t.start = begin;
    t.end = end;
  }
  return true;
}

}  // namespace charter::rt::gguf
