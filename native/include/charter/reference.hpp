// A header parsed once for many admissions (the mutation battery's conforming header).
//
// Note [Reference header]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A battery with both engines runs a C++ checker for every mutant, each over a header that is
// the conforming header (contract mutants) or differs from it in a few bytes (artifact mutants).
// Most of each run was reading that header again and hashing its vocabulary and merges (SmolLM2:
// 1.7 MB of array bytes per run). A caller may parse the header once into a Reference: the bytes
// it was read from, its view, and the sha256 of every string and array value. A run over a
// header byte-equal to the reference's (same format, file size and header limit) uses the
// reference's view instead of parsing; any run takes the reference's digest for a value whose
// bytes equal the reference's value under the same key, and hashes every other value. A parse is
// a function of those inputs and equal bytes have equal digests: a run with a reference says
// what the run without one says.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "charter/sha256.hpp"
#include "charter/view.hpp"

namespace charter::rt {

// The bytes a string or array value's digest is taken over (string: its text; array: its
// elements as stored).
inline std::string_view digested_bytes(const MetaEntry& e) { return e.type == VType::Str ? e.str : e.raw; }

struct Reference {
  std::string bytes;  // the header span `view` was read from (its string views point here)
  std::uint64_t max_header_bytes = 0;
  View view;
  std::vector<std::string> sha256;  // per entry of view.meta: the digest of its value, or ""

  Reference() = default;
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;

  void hash_values() {
    sha256.assign(view.meta.size(), std::string());
    for (std::size_t i = 0; i < view.meta.size(); ++i) {
      const MetaEntry& e = view.meta[i];
      if (e.type != VType::Str && e.type != VType::Array) continue;
      const std::string_view b = digested_bytes(e);
      sha256[i] = sha256_hex(reinterpret_cast<const unsigned char*>(b.data()), b.size());
    }
  }

  // Whether a parse of [header, header + size) would be this one.
  bool holds(Format format, const unsigned char* header, std::uint64_t size, std::uint64_t file_size,
             std::uint64_t max_header) const {
    return format == view.format && file_size == view.file_size && max_header == max_header_bytes &&
           size == bytes.size() && (size == 0 || std::memcmp(header, bytes.data(), size) == 0);
  }

  // The digest of `e`'s value if the reference holds the same bytes under its key, else nullptr.
  const std::string* digest_of(const MetaEntry& e) const {
    const MetaEntry* r = view.find(e.key);
    if (r == nullptr || sha256[r - view.meta.data()].empty()) return nullptr;
    const std::string_view mine = digested_bytes(e), theirs = digested_bytes(*r);
    if (mine.size() != theirs.size()) return nullptr;
    if (!mine.empty() && mine.data() != theirs.data() && std::memcmp(mine.data(), theirs.data(), mine.size()) != 0) {
      return nullptr;
    }
    return &sha256[r - view.meta.data()];
  }
};

}  // namespace charter::rt
