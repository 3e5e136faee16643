// The byte kernels a checker spends its time in, optimized even in an unoptimized build.
//
// Note [Hot kernels at -O0]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A battery run with `--engine both` compiles the checkers of its mutated contracts at -O0
// (charter.engines.library.FLAGS): compile time dominates there. But at -O0 the SIMD kernels
// that validate UTF-8 and hash strings (utf8.hpp, sha256.hpp) are six to seven times slower, and
// they were most of each checker's run: 10.8 ms against 1.6 ms at -O2 on SmolLM2's 49,152-token
// vocabulary. Bracketed by CHARTER_HOT_BEGIN/END, GCC optimizes those few functions at -O2
// whatever the command line says; the checks around them stay at -O0. An optimized build
// (__OPTIMIZE__: charter._native, `charter admit`'s one-off checkers) and other compilers are
// untouched. Optimization never changes what well-defined code computes; the battery compares
// both engines' verdicts on every mutant anyway.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__)
#define CHARTER_HOT_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"O2\")")
#define CHARTER_HOT_END _Pragma("GCC pop_options")
#else
#define CHARTER_HOT_BEGIN
#define CHARTER_HOT_END
#endif
