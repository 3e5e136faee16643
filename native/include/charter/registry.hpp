// How compiled checkers are found by key: charter._native registers every committed generated
// checker under its contract id, and can load more from a checker library built at run time
// (charter.engines.library: the C++ checkers of mutated contracts, Note [Checker libraries]).
//
// Note [Checker libraries]
// A checker library is a shared object g++ builds from many generated checker headers. It
// exports one C function, `charter_checker_library`, that returns its ABI stamp and its entries.
// The module and the library exchange C++ structs (Report holds std::strings), so the module
// refuses a library whose stamp differs from its own in anything that could change their layout:
// the stamp's version, the sizes of the exchanged structs, and the compiler that built it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "charter/admission.hpp"

namespace charter::rt {

using AdmitFn = Report (*)(const unsigned char* header, std::uint64_t size, std::uint64_t file_size,
                           const Options& options);

struct CheckerEntry {
  std::string_view key;  // the lookup key: the contract id, or a library's own key
  std::string_view id, model, spec, format, status;
  std::string_view companion;  // the file a contract's `config` binds beside the artifact, or ""
  Span<InputDigest> inputs;
  Span<StoreFacts> stores;
  AdmitFn admit;
};

// The entry of the generated checker in namespace `ns`, looked up by `key`.
#define CHARTER_CHECKER_ENTRY(ns, key)                                                            \
  ::charter::rt::CheckerEntry {                                                                   \
    key, ns::kContractId, ns::kModelId, ns::kSpec, ns::kFormat, ns::kStatus, ns::kCompanion,        \
        ::charter::rt::span(ns::kInputs), ns::kStoreFacts, &ns::admit                               \
  }

struct LibraryStamp {
  std::uint32_t version;
  std::uint32_t entry_size, report_size, options_size, diagnostic_size;
  const char* compiler;  // __VERSION__ of the compiler that built the object
};

inline constexpr std::uint32_t kLibraryVersion = 3;  // 2: Options::reader (Note [Store regions]); 3: ::reference

inline constexpr LibraryStamp library_stamp() {
  return LibraryStamp{kLibraryVersion, sizeof(CheckerEntry), sizeof(Report), sizeof(Options), sizeof(Diagnostic),
                      __VERSION__};
}

inline bool same_stamp(const LibraryStamp& a, const LibraryStamp& b) {
  return a.version == b.version && a.entry_size == b.entry_size && a.report_size == b.report_size &&
         a.options_size == b.options_size && a.diagnostic_size == b.diagnostic_size &&
         std::string_view(a.compiler) == std::string_view(b.compiler);
}

// The one symbol a checker library exports: its stamp, and `count` entries.
using LibraryFn = const CheckerEntry* (*)(LibraryStamp* stamp, std::size_t* count);
inline constexpr const char* kLibrarySymbol = "charter_checker_library";

}  // namespace charter::rt
