// Embedded stores (charter/formats/stores/, docs/stores.md): the byte layouts of the two store kinds, their
// geometry, and the byte regions a caller hands the checker so the `stores` stage can read the
// manifests without the checker ever opening the file.
//
// Note [Store regions]
// ~~~~~~~~~~~~~~~~~~~~
// Store manifests live in the data section, outside the header span. The checker asks the caller
// for each read the `stores` stage makes (for an ExpertMajor store its 128-byte manifest, component
// table and record table; for a PLE store its 512-byte header, the page table and padding in 1 MiB
// chunks, and the 64-byte headers of the first and last pages), as it asks for more header bytes:
// the caller's `RegionReader` (Options::reader) reads them with the reader the Python engine uses.
// Which regions are read is thus stated once per engine, in its stage (Context::read here,
// charter.admission.runtime.Context.read in Python), never planned beside it. A caller may also
// pass (absolute offset, bytes) regions up front (Options::regions): a read one of them holds in
// full is served from it; any other read is asked of the reader, whose answer stands (fewer bytes
// than asked: the file ended there). Without a reader, a read is served from the one region that
// holds the longest run of it, and one that no region holds in full is rejected exactly as
// charter.admission.runtime.Context.read rejects a short read (STORE_GEOMETRY, field "file", at
// the offset of the request). Every offset is computed in 128 bits with checked arithmetic from
// the header's extents and the contract's literals, and every access is bounded by the region
// that serves it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "charter/checked.hpp"
#include "charter/tables.hpp"

namespace charter::rt {

// `size` bytes of the artifact starting at absolute file offset `offset`, read by the caller.
struct Region {
  std::uint64_t offset = 0;
  const unsigned char* data = nullptr;
  std::uint64_t size = 0;
};

// The caller's reader of the artifact (Note [Store regions]): `read` fills `out` with up to
// `length` bytes at absolute `offset` (fewer: the file ends there) and returns true, or returns
// false when it could not read (the caller keeps its own error; the verdict is then INTERNAL,
// never a judgement of the file). The bytes are the caller's and live until the admission returns.
struct RegionReader {
  bool (*read)(void* context, std::uint64_t offset, std::uint64_t length, Region* out) = nullptr;
  void* context = nullptr;
};

namespace store {

using u128 = unsigned __int128;

// --- layouts (charter.formats.stores.layout: fixed little-endian records) ------------------------------

struct Field {
  std::string_view name;
  std::uint32_t offset;
  std::uint32_t width;  // bytes
  bool bytes;           // a byte string ("4s", "16s", "32s"), else an unsigned integer of `width`
};

struct Layout {
  std::string_view name;
  std::uint32_t size;
  Span<Field> fields;

  constexpr const Field* find(std::string_view field) const {
    for (const Field& f : fields) {
      if (f.name == field) return &f;
    }
    return nullptr;
  }
  constexpr std::uint32_t offset_of(std::string_view field) const {
    const Field* f = find(field);
    return f ? f->offset : 0;
  }
};

inline std::uint64_t load(const unsigned char* record, const Field& f) {
  return f.width == 4 ? load_u32(record + f.offset) : load_u64(record + f.offset);
}

// charter.formats.stores.expertmajor
inline constexpr Field kEmManifestFields[] = {
    {"magic", 0, 4, true},         {"version", 4, 4, false},         {"family", 8, 4, false},
    {"layers", 12, 4, false},      {"experts", 16, 4, false},        {"experts_used", 20, 4, false},
    {"components", 24, 4, false},  {"codec_id", 28, 4, false},       {"group_size", 32, 4, false},
    {"group_bytes", 36, 4, false}, {"record_bytes", 40, 8, false},   {"table_offset", 48, 8, false},
    {"records_offset", 56, 8, false}, {"record_count", 64, 8, false}, {"record_alignment", 72, 4, false},
    {"reserved", 76, 4, false},    {"sha256", 80, 32, true},
};
inline constexpr Layout kEmManifest{"expert-major manifest", 128, span(kEmManifestFields)};

inline constexpr Field kEmComponentFields[] = {
    {"name", 0, 16, true}, {"ne0", 16, 8, false}, {"ne1", 24, 8, false}, {"offset", 32, 8, false},
    {"bytes", 40, 8, false},
};
inline constexpr Layout kEmComponent{"component", 64, span(kEmComponentFields)};

inline constexpr Field kEmRecordFields[] = {
    {"layer", 0, 4, false}, {"expert", 4, 4, false}, {"offset", 8, 8, false}, {"sha256", 16, 32, true},
};
inline constexpr Layout kEmRecord{"record", 64, span(kEmRecordFields)};

inline constexpr std::string_view kEmMagic = "EXMJ";
inline constexpr std::uint64_t kEmComponentTable = 128;  // COMPONENT_TABLE = MANIFEST.size

// charter.formats.stores.ple
inline constexpr std::uint32_t kPleHeadsMax = 16;
inline constexpr Field kPleManifestFields[] = {
    {"magic", 0, 4, true},               {"version", 4, 4, false},           {"family", 8, 4, false},
    {"heads", 12, 4, false},             {"width", 16, 4, false},            {"row_alignment", 20, 4, false},
    {"logical_rows", 24, 8, false},      {"padded_rows", 32, 8, false},      {"rows_per_page", 40, 4, false},
    {"page_header_bytes", 44, 4, false}, {"encoded_row_bytes", 48, 4, false}, {"codec_version", 52, 4, false},
    {"group_size", 56, 4, false},        {"codec_id", 60, 4, false},         {"page_stride", 64, 8, false},
    {"page_count", 72, 8, false},        {"page_table_offset", 80, 8, false}, {"payload_offset", 88, 8, false},
    {"page_alignment", 96, 4, false},    {"reserved", 100, 4, false},
    {"head_rows[0]", 104, 8, false},     {"head_rows[1]", 112, 8, false},    {"head_rows[2]", 120, 8, false},
    {"head_rows[3]", 128, 8, false},     {"head_rows[4]", 136, 8, false},    {"head_rows[5]", 144, 8, false},
    {"head_rows[6]", 152, 8, false},     {"head_rows[7]", 160, 8, false},    {"head_rows[8]", 168, 8, false},
    {"head_rows[9]", 176, 8, false},     {"head_rows[10]", 184, 8, false},   {"head_rows[11]", 192, 8, false},
    {"head_rows[12]", 200, 8, false},    {"head_rows[13]", 208, 8, false},   {"head_rows[14]", 216, 8, false},
    {"head_rows[15]", 224, 8, false},    {"sha256", 232, 32, true},          {"payload_sha256", 264, 32, true},
};
inline constexpr Layout kPleManifest{"ple manifest", 512, span(kPleManifestFields)};

inline constexpr Field kPlePageFields[] = {
    {"page_index", 0, 8, false},        {"first_row", 8, 8, false},      {"valid_rows", 16, 4, false},
    {"width", 20, 4, false},            {"encoded_row_bytes", 24, 4, false}, {"rows_per_page", 28, 4, false},
    {"codec_version", 32, 4, false},    {"group_size", 36, 4, false},    {"family", 40, 4, false},
};
inline constexpr Layout kPlePage{"ple page header", 64, span(kPlePageFields)};

inline constexpr std::string_view kPleMagic = "PLE1";
inline constexpr std::uint64_t kPlePageTable = 512;  // PAGE_TABLE = MANIFEST.size
inline constexpr std::uint64_t kPleDigest = 32;

// charter.admission.stores: a manifest table larger than this is refused, never read; the PLE
// page table and padding are hashed in chunks of kChunk bytes, each one read (and bounded) alone.
inline constexpr std::uint64_t kMaxTableBytes = 256ull * 1024 * 1024;
inline constexpr std::uint64_t kChunk = 1ull << 20;

// --- checked 128-bit arithmetic: the geometry of contract literals --------------------------------

struct Num {
  u128 v = 0;
  bool ok = true;  // false: a negative or out-of-range input, an overflow, or a division by zero
};

inline Num num(const Int& i) { return Num{i.mag, !i.neg && !i.huge}; }
inline Num num(u128 v) { return Num{v, true}; }
inline Num operator+(Num a, Num b) {
  Num r;
  r.ok = a.ok && b.ok && !__builtin_add_overflow(a.v, b.v, &r.v);
  return r;
}
inline Num operator*(Num a, Num b) {
  Num r;
  r.ok = a.ok && b.ok && !__builtin_mul_overflow(a.v, b.v, &r.v);
  return r;
}
inline Num operator/(Num a, Num b) {  // Python's // on non-negative ints
  if (!a.ok || !b.ok || b.v == 0) return Num{0, false};
  return Num{a.v / b.v, true};
}
inline Num ceil_div(Num a, Num b) {  // -(-a // b)
  if (!a.ok || !b.ok || b.v == 0) return Num{0, false};
  return Num{a.v / b.v + (a.v % b.v != 0), true};
}
inline Num align_up(Num a, Num b) { return ceil_div(a, b) * b; }  // -(-a // b) * b

inline std::string u128s(u128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return s;
}

// charter.formats.stores.expertmajor.geometry
struct EmComponent {
  std::string_view name;
  u128 ne0 = 0, ne1 = 0, offset = 0, bytes = 0;
  std::string_view at;
};

struct EmGeometry {
  u128 record_bytes = 0, record_count = 0, table_offset = 0, records_offset = 0, size = 0;
};

// ple.geometry
struct PleGeometry {
  u128 padded_rows = 0, encoded_row_bytes = 0, page_count = 0, page_stride = 0, page_table_offset = 0,
       payload_offset = 0, size = 0;
};

// --- the regions the caller read ------------------------------------------------------------------

class Regions {
 public:
  explicit Regions(Span<Region> regions, RegionReader reader = {}) : regions_(regions), reader_(reader) {}

  // How many of the `length` bytes at `offset` one passed region holds (the longest run), and where.
  u128 available(u128 offset, u128 length, const unsigned char** at) const {
    u128 best = 0;
    *at = nullptr;
    for (const Region& r : regions_) {
      if (r.data == nullptr && r.size != 0) continue;  // no bytes behind it: holds nothing
      if (offset < r.offset || offset - r.offset > r.size) continue;
      const u128 into = offset - r.offset;
      const u128 have = r.size - into;
      const u128 n = have < length ? have : length;
      if (*at == nullptr || n > best) {
        best = n;
        *at = r.data ? r.data + static_cast<std::uint64_t>(into) : nullptr;  // null only when empty
      }
    }
    return best;
  }

  // Whether a read no passed region holds in full can be asked of the caller's reader.
  bool can_ask(u128 offset, u128 length) const {
    return reader_.read != nullptr && offset <= UINT64_MAX && length <= UINT64_MAX - offset;
  }

  // The reader's answer for the `length` bytes at `offset`: how many it read (at most `length`),
  // and where; false when it could not read.
  bool ask(u128 offset, u128 length, const unsigned char** at, u128* got) const {
    Region r{};
    if (!reader_.read(reader_.context, static_cast<std::uint64_t>(offset), static_cast<std::uint64_t>(length), &r)) {
      return false;
    }
    if (r.data == nullptr && r.size != 0) return false;
    *got = r.size < length ? r.size : length;
    *at = r.data;
    return true;
  }

 private:
  Span<Region> regions_;
  RegionReader reader_;
};

}  // namespace store

}  // namespace charter::rt
