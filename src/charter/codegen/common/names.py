"""Names in generated code: the one identifier policy of every target (Note [Generated identifiers]).

Note [Generated identifiers]
A contract id (`[a-z0-9][a-z0-9._-]{0,127}`) names files and symbols in every target: the Python
checker `python/<identifier>.py`, the C++ namespaces `charter::checkers::<identifier>`,
`charter::labels::<identifier>` and `charter::bindings::<identifier>`, the Metal namespace
`charter_metal::<identifier>`, and a kernel's function `charter._native.<identifier>`. Model
constants, kernel dims and attributes (ASCII names) become C++/MSL names the same way.

`identifier` maps a name to one spelling valid in Python, C++17 and MSL at once: every character
other than a letter, digit or `_` becomes `_`, runs of `_` collapse (C++ reserves `__`), leading
and trailing `_` go, a leading digit gets `c_`, and a reserved word (RESERVED, below) gets a
trailing `_`. The map is not injective (`c18-x`, `c18_x` and `c18.x` all become `c18_x`), so a
contract set is refused when two of its ids share an identifier (`ID_COLLISION`,
charter.contract.contractset); the code generators then refuse two outputs at one path as a second
line of defence (charter.codegen.driver). File names that use the raw id (`cpp/<id>.hpp`, ...) are
injective already: ids are unique in a set.

RESERVED is spelled out, not read from the running interpreter's `keyword` module, so generated
code is the same on every Python version (3.12 made `type` a soft keyword).
"""

from __future__ import annotations

import re

_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")

# Python 3.13 keywords and soft keywords (tests check these cover the running interpreter's).
PYTHON_WORDS = frozenset("""
False None True and as assert async await break class continue def del elif else except finally
for from global if import in is lambda nonlocal not or pass raise return try while with yield
_ case match type
""".split())

# C++20 keywords and alternative tokens, plus `import` and `module` (C++20 reads them specially at
# the start of a line).
CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t
class compl concept const consteval constexpr constinit const_cast continue co_await co_return
co_yield decltype default delete do double dynamic_cast else enum explicit export extern false
float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
operator or or_eq private protected public register reinterpret_cast requires return short signed
sizeof static static_assert static_cast struct switch template this thread_local throw true try
typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
import module
""".split())

# Names that would break C++ inside the namespaces generated code opens: `charter::checkers::std`
# hides `std` from the checker's own `using std::...`, `charter::checkers::charter` hides
# `charter::rt`; `errno` is an object-like macro of <cerrno>, `linux`, `unix` and `i386` are
# predefined macros under GNU dialects.
CPP_NAMES = frozenset("""
std charter checkers labels bindings bind kernels rt charter_metal charter_library
errno linux unix i386
""".split())

# Metal Shading Language words and types (MSL is C++14 plus these).
MSL_WORDS = frozenset("""
kernel vertex fragment device constant threadgroup thread ray_data object_data visible stitchable
half uint ushort uchar ulong bool2 float2 float3 float4 int2 int3 int4 uint2 uint3 uint4 metal
sampler texture1d texture2d texture3d array vec packed_float3 size_t ptrdiff_t uint8_t uint16_t
uint32_t uint64_t int8_t int16_t int32_t int64_t Args
""".split())

# charter._native's own attributes: a kernel binding of that name would replace one of them.
NATIVE_NAMES = frozenset("""
admit admit_detail contracts info load_library read tensor_extents store_layouts ggml_types
safetensors_dtypes first_bad_value first_out_of_bounds COMPILER JSON_MAX_DEPTH GGUF_MAX_HEADER_BYTES STORE_MAX_TABLE_BYTES
STORE_CHUNK reference Reference changed_at
""".split())

RESERVED = PYTHON_WORDS | CPP_KEYWORDS | CPP_NAMES | MSL_WORDS | NATIVE_NAMES


def identifier(name: str) -> str:
    """The Python, C++ and MSL identifier of a contract id or name (Note [Generated identifiers])."""
    out = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", name)).strip("_") or "x"
    if out[0].isdigit():
        out = f"c_{out}"
    return out + "_" if out in RESERVED else out


def module_name(contract_id: str) -> str:
    """The file stem of a contract's generated Python module; refuses what is not a contract id, so
    a name can never hold a path separator or leave the output directory."""
    if not _ID.fullmatch(contract_id):
        raise ValueError(f"not a contract id: {contract_id!r}")
    return identifier(contract_id)
