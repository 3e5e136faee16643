// A JSON reader with CPython 3.11's `json` error semantics, for the safetensors header walker.
//
// charter/formats/safetensors.py decodes values with json.JSONDecoder (the C scanner, with
// duplicate keys rejected at each object's close, NaN/Infinity rejected, ints limited to 4300
// digits) and reports a JSONDecodeError at its `pos`. To give the same diagnostic, this reader
// follows Modules/_json.c of CPython 3.11 step by step: the same scanning order, the same index in
// each error. Positions are byte offsets into the UTF-8 text (structural characters are ASCII, so
// byte and character scanning agree; the caller's offsets are bytes anyway).
//
// One bound differs by nature: Python's nesting limit is the interpreter's recursion limit minus
// the current stack depth; here it is kMaxDepth (docs/native.md, "What the differential does not
// prove").
//
// Numbers::Serde reads the integer literal `-0` as a float, as serde_json (and so the safetensors
// crate) does and as the Python reader's walker decoder does (Note [Safetensors numbers] in
// charter/formats/safetensors.py); Numbers::Python reads it as the int 0, as json.loads does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <forward_list>
#include <string>
#include <string_view>
#include <vector>

#include "charter/checked.hpp"
#include "charter/flat.hpp"

namespace charter::rt::json {

inline constexpr int kMaxDepth = 800;
inline constexpr std::size_t kMaxIntDigits = 4300;  // sys.get_int_max_str_digits() default

enum class Kind : std::uint8_t { Null, True, False, Int, Float, Str, Arr, Obj };

inline std::string_view kind_name(Kind k) {  // type(value).__name__ in Python
  switch (k) {
    case Kind::Null: return "NoneType";
    case Kind::True: case Kind::False: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Arr: return "list";
    case Kind::Obj: return "dict";
  }
  return "object";
}

// A header holds up to one Node per , : [ (2**21), so a Node is kept small: 48 bytes, its Int in
// fields of its own (an Int is 32 bytes, and only Int nodes have one).
struct Node {
  Kind kind = Kind::Null;
  bool lone = false;         // Str: holds a lone surrogate (cannot be encoded as UTF-8)
  bool neg = false;          // Int: the value is negative (not for -0, which Python reads as 0)
  bool huge = false;         // Int: |value| >= 2^64 (its digits are `s` without the sign)
  std::uint32_t first = 0;   // Arr: index into items; Obj: index into members
  std::uint64_t pos = 0;     // where the value starts in the text
  std::uint64_t mag = 0;     // Int: |value| when !huge
  std::string_view s{};      // Str: decoded (surrogates as 3-byte sequences); Int/Float: the text
  std::uint32_t count = 0;

  Int num() const {  // Int nodes
    Int i = huge ? Int::out_of_range(neg) : neg ? Int::negative(mag) : Int(mag);
    if (huge) i.digits = s.substr(s[0] == '-' ? 1 : 0);
    return i;
  }
};

struct Member {  // 32 bytes, twice per member at an object's close (pending, then kept)
  std::string_view key;
  std::uint64_t key_pos = 0;  // the key's opening quote
  std::uint32_t value = 0;    // node index
  bool lone = false;
};

enum class Err : std::uint8_t { None, Syntax, Value, Dup, Depth };

enum class Numbers : std::uint8_t { Python, Serde };

inline bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The vectors a Doc fills, kept per thread between documents so that admitting many headers does
// not allocate and free them each time (a Doc is never nested inside another on one thread).
struct Scratch {
  std::vector<Node> nodes;
  std::vector<std::uint32_t> items, stack;
  std::vector<Member> members, mstack;
};

inline Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}

class Doc {
 public:
  Doc(const unsigned char* text, std::size_t n, Numbers numbers = Numbers::Python)
      : nodes(scratch().nodes), items(scratch().items), members(scratch().members), t_(text), n_(n),
        numbers_(numbers), stack_(scratch().stack), mstack_(scratch().mstack) {
    nodes.clear();
    items.clear();
    members.clear();
    stack_.clear();
    mstack_.clear();
  }
  Doc(const Doc&) = delete;
  Doc& operator=(const Doc&) = delete;

  std::vector<Node>& nodes;
  std::vector<std::uint32_t>& items;
  std::vector<Member>& members;
  Err err = Err::None;
  std::uint64_t err_pos = 0;  // Syntax: JSONDecodeError.pos

  // Room for `values` values and members at once (a bound known before parsing: the safetensors
  // walker's count of , : [), so that the vectors are never copied while they grow: reserved
  // pages cost address space only until they are used.
  void reserve(std::size_t values) {
    nodes.reserve(values);
    members.reserve(values);
    mstack_.reserve(values);
  }

  // Return the pages of the pending stacks, empty once a whole value is parsed: a header of a
  // million members fills 32 MiB of them, which would otherwise stay resident while the view is
  // built from the members (docs/security.md, "What a header can cost").
  void release_stacks() {
    std::vector<std::uint32_t>().swap(stack_);
    std::vector<Member>().swap(mstack_);
  }

  std::size_t size() const { return n_; }
  unsigned char at(std::size_t i) const { return t_[i]; }

  std::size_t ws(std::size_t i) const {
    while (i < n_ && is_ws(t_[i])) ++i;
    return i;
  }

  const Node& node(std::uint32_t i) const { return nodes[i]; }
  const std::uint32_t* item_begin(const Node& a) const { return items.data() + a.first; }
  const Member* member_begin(const Node& o) const { return members.data() + o.first; }

  const Member* find(const Node& o, std::string_view key) const {
    for (std::uint32_t k = 0; k < o.count; ++k) {
      if (members[o.first + k].key == key) return &members[o.first + k];
    }
    return nullptr;
  }

  // c_scanstring: `begin` is the index after the opening quote; on success `*end` is the index
  // after the closing quote.
  bool scanstring(std::size_t begin, std::size_t* end_out, std::string_view* out, bool* lone) {
    std::size_t end = begin;
    std::string* buf = nullptr;
    *lone = false;
    while (true) {
      std::size_t next = end;
      unsigned char c = 0;
      for (; next < n_; ++next) {
        c = t_[next];
        if (c == '"' || c == '\\') break;
        if (c <= 0x1f) return syntax(next);  // Invalid control character at
      }
      if (next >= n_) return syntax(begin - 1);  // Unterminated string starting at
      if (c == '"' && !buf) {
        *out = std::string_view(reinterpret_cast<const char*>(t_ + begin), next - begin);
        *end_out = next + 1;
        return true;
      }
      if (!buf) {
        strings_.emplace_front(reinterpret_cast<const char*>(t_ + begin), end - begin);
        buf = &strings_.front();
      }
      buf->append(reinterpret_cast<const char*>(t_ + end), next - end);
      ++next;
      if (c == '"') {
        end = next;
        break;
      }
      if (next == n_) return syntax(begin - 1);
      c = t_[next];
      std::uint32_t cp{};
      if (c != 'u') {
        end = next + 1;
        switch (c) {
          case '"': case '\\': case '/': cp = c; break;
          case 'b': cp = '\b'; break;
          case 'f': cp = '\f'; break;
          case 'n': cp = '\n'; break;
          case 'r': cp = '\r'; break;
          case 't': cp = '\t'; break;
          default: return syntax(end - 2);  // Invalid \escape
        }
      } else {
        ++next;
        end = next + 4;
        if (end >= n_) return syntax(next - 1);  // Invalid \uXXXX escape
        if (!hex4(next, &cp)) return syntax(end - 5);
        next = end;
        if (cp >= 0xD800 && cp <= 0xDBFF && end + 6 < n_ && t_[next] == '\\' && t_[next + 1] == 'u') {
          std::uint32_t c2{};
          if (!hex4(end + 2, &c2)) return syntax(end + 6 - 5);
          if (c2 >= 0xDC00 && c2 <= 0xDFFF) {
            cp = 0x10000 + (((cp - 0xD800) << 10) | (c2 - 0xDC00));
            end += 6;
          }
        }
      }
      if (cp >= 0xD800 && cp <= 0xDFFF) *lone = true;
      put_utf8(*buf, cp);
    }
    *out = *buf;
    *end_out = end;
    return true;
  }

  // scan_once: the value at `idx`; on success `*node` is its index and `*end` the index after it.
  bool value(std::size_t idx, std::size_t* end, std::uint32_t* node, int depth) {
    if (idx >= n_) return syntax(idx);  // Expecting value (StopIteration)
    const unsigned char c = t_[idx];
    switch (c) {
      case '"': {
        Node v;
        v.kind = Kind::Str;
        v.pos = idx;
        if (!scanstring(idx + 1, end, &v.s, &v.lone)) return false;
        return push(v, node);
      }
      case '{':
        if (depth + 1 > kMaxDepth) return fail(Err::Depth, idx);
        return object(idx, end, node, depth + 1);
      case '[':
        if (depth + 1 > kMaxDepth) return fail(Err::Depth, idx);
        return array(idx, end, node, depth + 1);
      case 'n':
        if (idx + 3 < n_ && t_[idx + 1] == 'u' && t_[idx + 2] == 'l' && t_[idx + 3] == 'l') {
          *end = idx + 4;
          return push_kind(Kind::Null, idx, node);
        }
        break;
      case 't':
        if (idx + 3 < n_ && t_[idx + 1] == 'r' && t_[idx + 2] == 'u' && t_[idx + 3] == 'e') {
          *end = idx + 4;
          return push_kind(Kind::True, idx, node);
        }
        break;
      case 'f':
        if (idx + 4 < n_ && t_[idx + 1] == 'a' && t_[idx + 2] == 'l' && t_[idx + 3] == 's' && t_[idx + 4] == 'e') {
          *end = idx + 5;
          return push_kind(Kind::False, idx, node);
        }
        break;
      case 'N':
        if (idx + 2 < n_ && t_[idx + 1] == 'a' && t_[idx + 2] == 'N') return fail(Err::Value, idx);
        break;
      case 'I':
        if (idx + 7 < n_ && match(idx, "Infinity")) return fail(Err::Value, idx);
        break;
      case '-':
        if (idx + 8 < n_ && match(idx, "-Infinity")) return fail(Err::Value, idx);
        break;
      default:
        break;
    }
    return number(idx, end, node);
  }

 private:
  bool syntax(std::size_t pos) { return fail(Err::Syntax, pos); }
  bool fail(Err e, std::size_t pos) {
    err = e;
    err_pos = pos;
    return false;
  }

  bool match(std::size_t idx, std::string_view word) const {
    return std::string_view(reinterpret_cast<const char*>(t_ + idx), word.size()) == word;
  }

  bool push(const Node& v, std::uint32_t* node) {
    *node = static_cast<std::uint32_t>(nodes.size());
    nodes.push_back(v);
    return true;
  }
  bool push_kind(Kind k, std::size_t pos, std::uint32_t* node) {
    Node v;
    v.kind = k;
    v.pos = pos;
    return push(v, node);
  }

  bool hex4(std::size_t i, std::uint32_t* out) const {
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const unsigned char d = t_[i + k];
      v <<= 4;
      if (d >= '0' && d <= '9') v |= d - '0';
      else if (d >= 'a' && d <= 'f') v |= d - 'a' + 10;
      else if (d >= 'A' && d <= 'F') v |= d - 'A' + 10;
      else return false;
    }
    *out = v;
    return true;
  }

  static void put_utf8(std::string& s, std::uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  static bool digit(unsigned char c) { return c >= '0' && c <= '9'; }

  // _match_number_unicode
  bool number(std::size_t start, std::size_t* end, std::uint32_t* node) {
    const std::size_t last = n_ - 1;  // n_ > start >= 0
    std::size_t idx = start;
    bool neg = false;
    if (t_[idx] == '-') {
      neg = true;
      ++idx;
      if (idx > last) return syntax(start);
    }
    const std::size_t int_start = idx;
    if (t_[idx] >= '1' && t_[idx] <= '9') {
      ++idx;
      while (idx <= last && digit(t_[idx])) ++idx;
    } else if (t_[idx] == '0') {
      ++idx;
    } else {
      return syntax(start);
    }
    const std::size_t int_end = idx;
    bool is_float = false;
    if (idx < last && t_[idx] == '.' && digit(t_[idx + 1])) {
      is_float = true;
      idx += 2;
      while (idx <= last && digit(t_[idx])) ++idx;
    }
    if (idx < last && (t_[idx] == 'e' || t_[idx] == 'E')) {
      const std::size_t e_start = idx;
      ++idx;
      if (idx < last && (t_[idx] == '-' || t_[idx] == '+')) ++idx;
      while (idx <= last && digit(t_[idx])) ++idx;
      if (digit(t_[idx - 1])) is_float = true;
      else idx = e_start;
    }
    Node v;
    v.pos = start;
    v.s = std::string_view(reinterpret_cast<const char*>(t_ + start), idx - start);
    *end = idx;
    const bool minus_zero = neg && int_end - int_start == 1 && t_[int_start] == '0';
    if (is_float || (minus_zero && numbers_ == Numbers::Serde)) {
      v.kind = Kind::Float;
      return push(v, node);
    }
    const std::size_t ndigits = int_end - int_start;
    if (ndigits > kMaxIntDigits) return fail(Err::Value, start);  // int() refuses, a ValueError
    v.kind = Kind::Int;
    std::uint64_t mag = 0;
    bool huge = false;
    for (std::size_t k = int_start; k < int_end; ++k) {
      if (mul_overflows(mag, 10, &mag) || add_overflows(mag, t_[k] - '0', &mag)) {
        huge = true;
        break;
      }
    }
    v.huge = huge;
    v.neg = huge ? neg : neg && mag != 0;  // as Int::out_of_range and Int::negative
    v.mag = huge ? 0 : mag;
    return push(v, node);
  }

  bool array(std::size_t open, std::size_t* end, std::uint32_t* node, int depth) {
    const std::size_t last_plus = n_;
    std::size_t idx = open + 1;
    while (idx < last_plus && is_ws(t_[idx])) ++idx;
    const std::size_t mark = stack_.size();
    if (idx >= n_ || t_[idx] != ']') {
      while (true) {
        std::uint32_t child{};
        std::size_t next{};
        if (!value(idx, &next, &child, depth)) return false;
        stack_.push_back(child);
        idx = next;
        while (idx < n_ && is_ws(t_[idx])) ++idx;
        if (idx < n_ && t_[idx] == ']') break;
        if (idx >= n_ || t_[idx] != ',') return syntax(idx);  // Expecting ',' delimiter
        ++idx;
        while (idx < n_ && is_ws(t_[idx])) ++idx;
      }
    }
    Node v;
    v.kind = Kind::Arr;
    v.pos = open;
    v.first = static_cast<std::uint32_t>(items.size());
    v.count = static_cast<std::uint32_t>(stack_.size() - mark);
    items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    *end = idx + 1;
    return push(v, node);
  }

  bool object(std::size_t open, std::size_t* end, std::uint32_t* node, int depth) {
    std::size_t idx = open + 1;
    while (idx < n_ && is_ws(t_[idx])) ++idx;
    const std::size_t mark = mstack_.size();
    if (idx >= n_ || t_[idx] != '}') {
      while (true) {
        if (idx >= n_ || t_[idx] != '"') return syntax(idx);  // Expecting property name ...
        Member m;
        m.key_pos = idx;
        std::size_t next{};
        if (!scanstring(idx + 1, &next, &m.key, &m.lone)) return false;
        idx = next;
        while (idx < n_ && is_ws(t_[idx])) ++idx;
        if (idx >= n_ || t_[idx] != ':') return syntax(idx);  // Expecting ':' delimiter
        ++idx;
        while (idx < n_ && is_ws(t_[idx])) ++idx;
        if (!value(idx, &next, &m.value, depth)) return false;
        mstack_.push_back(m);
        idx = next;
        while (idx < n_ && is_ws(t_[idx])) ++idx;
        if (idx < n_ && t_[idx] == '}') break;
        if (idx >= n_ || t_[idx] != ',') return syntax(idx);  // Expecting ',' delimiter
        ++idx;
        while (idx < n_ && is_ws(t_[idx])) ++idx;
      }
    }
    // object_pairs_hook runs at the close: a duplicate key is a ValueError of the whole value.
    if (has_duplicate(mark)) return fail(Err::Dup, open);
    Node v;
    v.kind = Kind::Obj;
    v.pos = open;
    v.first = static_cast<std::uint32_t>(members.size());
    v.count = static_cast<std::uint32_t>(mstack_.size() - mark);
    members.insert(members.end(), mstack_.begin() + static_cast<std::ptrdiff_t>(mark), mstack_.end());
    mstack_.resize(mark);
    *end = idx + 1;
    return push(v, node);
  }

  bool has_duplicate(std::size_t mark) const {
    const std::size_t n = mstack_.size() - mark;
    if (n < 2) return false;
    if (n <= 16) {
      for (std::size_t i = mark; i < mstack_.size(); ++i) {
        for (std::size_t k = i + 1; k < mstack_.size(); ++k) {
          if (mstack_[i].key == mstack_[k].key) return true;
        }
      }
      return false;
    }
    KeyIndex seen;
    const auto key_of = [this](std::size_t k) { return mstack_[k].key; };
    for (std::size_t i = mark; i < mstack_.size(); ++i) {
      if (seen.insert(mstack_[i].key, i, key_of)) return true;
    }
    return false;
  }

  const unsigned char* t_;
  std::size_t n_{};
  Numbers numbers_;
  std::forward_list<std::string> strings_;  // decoded strings; stable addresses
  std::vector<std::uint32_t>& stack_;
  std::vector<Member>& mstack_;
};

}  // namespace charter::rt::json
