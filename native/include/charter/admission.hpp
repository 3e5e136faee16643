// The admission runtime for generated C++ checkers: tell the format from the first bytes
// (charter/sniff.hpp), read the header with the strict walker of the contract's format, then run
// the stages in order and stop at the first failure (Note [Ordered admission],
// charter/admission/runtime.py). CPU-only, header-only, no exceptions across the boundary: the
// result is a Report.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "charter/checks.hpp"
#include "charter/gguf.hpp"
#include "charter/reference.hpp"
#include "charter/report.hpp"
#include "charter/safetensors.hpp"
#include "charter/sniff.hpp"
#include "charter/stores.hpp"
#include "charter/tables.hpp"
#include "charter/view.hpp"

namespace charter::rt {

struct Options {
  std::string_view require_status{};  // "" : no requirement (admit --require-status)
  std::uint64_t max_header_bytes = gguf::kMaxHeaderBytes;
  // Bytes outside the header the stores stage reads (Note [Store regions], charter/stores.hpp):
  // the caller's reader, asked for each read, and (absolute offset, bytes) regions it read up
  // front; a contract without stores needs neither.
  RegionReader reader{};
  Span<Region> regions{};
  // The companion file a contract's `config` binds (config.json beside the artifact), read by the
  // caller (charter/companion.hpp); a contract without `config` needs none.
  Companion companion{};
  // A bundle's weight file (Note [Bundle stages]): its share of the inventory and owned keys, and
  // the stages that do not run on it (a GGUF split set's later splits: the set's metadata is its
  // first split's).
  Share share{};
  Span<std::string_view> skip{};
  // A header parsed once (Note [Reference header], charter/reference.hpp), or none.
  const Reference* reference = nullptr;
};

using StageCheck = bool (*)(Context&);

struct StageFn {
  std::string_view name;
  StageCheck check;
};

struct InputDigest {
  std::string_view path, sha256;
};

// Admit the header in [header, header + size) of a file of `file_size` bytes. The payload stage
// is never run here (it reads tensor bytes); the caller reports it skipped or runs it itself.
// Read the header with the strict reader of `format` into `v`; false (and `r` says why, at the
// container stage) if the bytes are not one.
inline bool read_header(Format format, const unsigned char* header, std::uint64_t size, std::uint64_t file_size,
                        std::uint64_t max_header_bytes, View& v, Report& r) {
  const bool read = sniff::require_format(format, header, size < file_size ? size : file_size, file_size, r) &&
                    (format == Format::Gguf ? gguf::parse(header, size, file_size, v, r, max_header_bytes)
                                            : safetensors::parse(header, size, file_size, v, r));
  if (!read) r.stage = stage::kContainer;
  return read;
}

inline Report run(Format format, Span<StageFn> stages, const unsigned char* header, std::uint64_t size,
                  std::uint64_t file_size, const Options& options) {
  Report r;
  const Reference* ref = options.reference;
  View parsed;
  const bool same = ref != nullptr && ref->holds(format, header, size, file_size, options.max_header_bytes);
  if (!same && !read_header(format, header, size, file_size, options.max_header_bytes, parsed, r)) return r;
  const View& v = same ? ref->view : parsed;
  Share share = options.share;
  share.metadata_elsewhere =
      std::find(options.skip.begin(), options.skip.end(), stage::kMetadata) != options.skip.end();
  Context ctx(v, r, options.require_status, store::Regions(options.regions, options.reader), options.companion,
              share, ref);
  for (const StageFn& s : stages) {
    if (s.name == stage::kPayload) continue;
    if (std::find(options.skip.begin(), options.skip.end(), s.name) != options.skip.end()) continue;
    if (!s.check(ctx)) {
      r.stage = s.name;
      return r;
    }
  }
  return r;
}

}  // namespace charter::rt
