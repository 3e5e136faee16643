// What a file is, from its first bytes: the C++ mirror of charter/formats/sniff.py
// (Note [Format sniff] there). Same rules in the same order, same diagnostic: CONTAINER_FORMAT
// (field `format`, offset 0) when the first bytes name another format than the contract's, or
// CONTAINER_TRUNCATED (field `format`, asking for more) when the span is shorter than the window
// of a longer file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "charter/checked.hpp"
#include "charter/fail.hpp"
#include "charter/report.hpp"
#include "charter/safetensors.hpp"
#include "charter/view.hpp"

namespace charter::rt::sniff {

inline constexpr std::uint64_t kSniffBytes = 16;

enum class Found : std::uint8_t { Gguf, Safetensors, Zip, Pickle, Json, Unknown };

inline std::string_view found_name(Found f) {
  switch (f) {
    case Found::Gguf: return "gguf";
    case Found::Safetensors: return "safetensors";
    case Found::Zip: return "zip";
    case Found::Pickle: return "pickle";
    case Found::Json: return "json";
    case Found::Unknown: break;
  }
  return "unknown";
}

inline bool json_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline bool json_text(const unsigned char* p, std::uint64_t n) {
  std::uint64_t i = (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) ? 3 : 0;
  for (std::uint64_t k = i; k < n; ++k) {
    if (p[k] < 0x20 && !json_ws(p[k])) return false;
  }
  while (i < n && json_ws(p[i])) ++i;
  return i < n && (p[i] == '{' || p[i] == '[');
}

// The format the first `n` bytes name (n: the window, or the whole file when shorter).
inline Found sniff(const unsigned char* p, std::uint64_t n) {
  const auto starts = [&](std::string_view magic) {
    return n >= magic.size() && std::string_view(reinterpret_cast<const char*>(p), magic.size()) == magic;
  };
  if (starts("GGUF")) return Found::Gguf;
  if (starts(std::string_view("PK\x03\x04", 4)) || starts(std::string_view("PK\x05\x06", 4))) return Found::Zip;
  if (n >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5) return Found::Pickle;
  if (json_text(p, n)) return Found::Json;
  if (n >= 9 && p[8] == '{') return Found::Safetensors;
  return Found::Unknown;
}

inline std::string describe(Found f, const unsigned char* p, std::uint64_t n) {
  switch (f) {
    case Found::Gguf: return "a GGUF file";
    case Found::Safetensors: return "a safetensors file";
    case Found::Zip: return "a zip archive (torch.save writes one: pytorch_model.bin, *.pt)";
    case Found::Pickle: return "a Python pickle (a legacy torch.save file; charter never unpickles)";
    case Found::Json:
      return "JSON text (a config, or a sharded checkpoint's index such as model.safetensors.index.json)";
    case Found::Unknown: break;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string bytes;
  for (std::uint64_t i = 0; i < n && i < 8; ++i) {
    if (i) bytes += ' ';
    bytes += kHex[p[i] >> 4];
    bytes += kHex[p[i] & 15];
  }
  return "no format charter knows (it starts " + bytes + ": no GGUF magic, and as a safetensors header length " +
         u64s(load_u64(p)) + " is over the " + u64s(safetensors::kMaxHeaderBytes) + "-byte limit)";
}

// require_format: true when the file is to be read as `expected`; else the report holds the one
// diagnostic.
inline bool require_format(Format expected, const unsigned char* p, std::uint64_t size, std::uint64_t file_size,
                           Report& r) {
  const std::uint64_t want = file_size < kSniffBytes ? file_size : kSniffBytes;
  if (size < want) {
    r.needs_more = true;
    r.need = want;
    return reject(r, Code::CONTAINER_TRUNCATED, "format",
                  "the provided buffer holds " + u64s(size) + " bytes; telling the format needs the first " + u64s(want),
                  0, ">= " + u64s(want) + " bytes", u64s(size));
  }
  const Found found = sniff(p, want);
  const std::string_view name = format_name(expected);
  if (found_name(found) == name) return true;
  // A file of no known format that may be a damaged `expected` file: its reader says more.
  if (found == Found::Unknown &&
      (expected == Format::Gguf || want < 8 || load_u64(p) <= safetensors::kMaxHeaderBytes)) {
    return true;
  }
  return reject(r, Code::CONTAINER_FORMAT, "format",
                "this is " + describe(found, p, want) + "; the contract expects " + std::string(name), 0,
                show_str(name), show_str(found_name(found)));
}

}  // namespace charter::rt::sniff
