// An index of string keys by open addressing: the slots hold positions into the caller's sequence,
// one allocation in all. A header holds up to 2**17 tensor names, and a safetensors header up to
// 2**20 keys (Note [Reader limits] in charter/formats/gguf.py, Note [JSON structure limit] in
// charter/formats/safetensors.py); std::unordered_map allocates a node per key, and a million of
// them took 1.5 s to insert on the machine of bench/README.md, this a fifth of that.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace charter::rt {

class KeyIndex {
 public:
  void clear() {
    slots_.clear();
    size_ = 0;
  }

  // The position of `key` (`key_of(position)` gives the key at a position of the sequence).
  template <class KeyOf>
  std::optional<std::size_t> find(std::string_view key, KeyOf&& key_of) const {
    if (slots_.empty()) return std::nullopt;
    const std::uint64_t t = tag(key);
    for (std::size_t i = t & mask(); slots_[i]; i = (i + 1) & mask()) {
      if ((slots_[i] >> 32) == t && key_of(position(slots_[i])) == key) return position(slots_[i]);
    }
    return std::nullopt;
  }

  // Index `key` at `pos` unless it is there already: then its position, and nothing changes.
  template <class KeyOf>
  std::optional<std::size_t> insert(std::string_view key, std::size_t pos, KeyOf&& key_of) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const std::uint64_t t = tag(key);
    std::size_t i = t & mask();
    for (; slots_[i]; i = (i + 1) & mask()) {
      if ((slots_[i] >> 32) == t && key_of(position(slots_[i])) == key) return position(slots_[i]);
    }
    slots_[i] = (t << 32) | (static_cast<std::uint64_t>(pos) + 1);
    ++size_;
    return std::nullopt;
  }

 private:
  // 32 bits of the key's hash: where its probe starts, and enough to tell most keys apart
  // without reading them.
  static std::uint64_t tag(std::string_view key) {
    const std::uint64_t h = std::hash<std::string_view>{}(key);
    return (h ^ (h >> 32)) & 0xFFFFFFFFull;
  }
  static std::size_t position(std::uint64_t slot) { return static_cast<std::size_t>((slot & 0xFFFFFFFFull) - 1); }
  std::size_t mask() const { return slots_.size() - 1; }

  void grow() {
    std::vector<std::uint64_t> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), 0);
    for (const std::uint64_t s : old) {
      if (!s) continue;
      std::size_t i = (s >> 32) & mask();
      while (slots_[i]) i = (i + 1) & mask();
      slots_[i] = s;
    }
  }

  std::vector<std::uint64_t> slots_;  // 0: empty; else hash's high 32 bits, position + 1
  std::size_t size_ = 0;
};

}  // namespace charter::rt
