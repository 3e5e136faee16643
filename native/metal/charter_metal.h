// What charter's Metal kernel sources (native/metal/*.metal) include first.
//
// On Metal (__METAL_VERSION__ is defined by the Metal compiler): the Metal standard library.
// Elsewhere: a small C++17 shim, so the very same sources compile with g++ or clang++ and each
// kernel function can be called once per grid position on the CPU (tests/native/test_metal.py).
// The shim removes the address-space and function qualifiers, which have no meaning on a CPU,
// names the MSL scalar types, and provides the few metal:: functions the kernels use, with the
// IEEE semantics the `precise` namespace promises on Metal. Unknown attributes such as
// [[buffer(0)]] are ignored by the host compiler (compile with -Wno-attributes).
//
// What this proves and what it does not: docs/native.md, "Kernels and Metal".
#pragma once

#if defined(__METAL_VERSION__)

#include <metal_stdlib>
using namespace metal;

#else  // the C++17 shim

// Everything a kernel or a generated header includes, before the qualifier macros below exist.
#include <stddef.h>
#include <stdint.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define kernel
#define device
#define constant
#define threadgroup
#define thread

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
static_assert(sizeof(uchar) == 1 && sizeof(ushort) == 2 && sizeof(uint) == 4 && sizeof(ulong) == 8,
              "the shim needs MSL's scalar widths (an LP64 host)");

namespace metal {

// Reinterpret the bits of a value of the same size (MSL's as_type<T>).
template <typename T, typename U>
inline T as_type(U value) noexcept {
  static_assert(sizeof(T) == sizeof(U), "as_type needs types of the same size");
  T out;
  std::memcpy(&out, &value, sizeof out);
  return out;
}

namespace precise {
inline float sqrt(float x) noexcept { return std::sqrt(x); }
inline float divide(float x, float y) noexcept { return x / y; }
}  // namespace precise

}  // namespace metal

using namespace metal;

#endif  // __METAL_VERSION__
