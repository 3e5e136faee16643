"""The hostile-artifact corpus: every case built here, by code, with the diagnostic that must reject it.

Note [Hostile corpus]
~~~~~~~~~~~~~~~~~~~~~
No binary blobs: each case starts from one small conforming file (`base_gguf`, `base_safetensors`,
both admitted by the contracts `write_contracts` writes) and changes one thing, so every byte of a
case can be explained by the line that made it. A `Case` carries the bytes, the format, and the one
diagnostic (`code`, and `field` where the field is part of the contract with the user) that
`charter admit FILE --contract CONTRACTS[case.contract]` must reject it with (exit 1).

Truncations are cut at every structural boundary of the base files. The builders record, for every
field they write, its byte range and the field path charter's readers report (`Mark`), so the
expected diagnostic of a cut follows from a few rules (`_gguf_cut_expectation`) rather than from
running the reader.

The module is imported by tests/hardening (CI) and by bench/hostile.py (the side-by-side table with
gguf.GGUFReader and the safetensors package), so it depends on nothing but the standard library.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import struct
import zipfile
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from pathlib import Path

# GGUF value types and ggml type ids (independent of charter's tables on purpose).
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
GGML_F32, GGML_F16, GGML_Q8_0, GGML_I64 = 0, 1, 8, 27
U64_MAX = 2**64 - 1

# A chat template that is also a server-side template injection: rendering it with a plain
# (non-sandboxed) jinja2 Environment sets an environment variable. Admission must never render it.
PWNED_ENV = "CHARTER_HOSTILE_PWNED"
JINJA_PAYLOAD = (
    "{{ cycler.__init__.__globals__.os.environ.__setitem__('" + PWNED_ENV + "', 'chat_template') }}"
    "{% for m in messages %}{{ m.content }}{% endfor %}"
)
# Other string metadata carries format-string, %-format and Python payloads: data, never code.
NAME_PAYLOAD = "hostile {0.__class__} %s%n ${HOME} $(touch /tmp/charter-pwned) __import__('os')"


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


# --- cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One hostile artifact and the one diagnostic that must reject it."""

    name: str
    klass: str  # the issue's class of hostile input
    format: str  # "gguf" | "safetensors"
    data: bytes = dc_field(repr=False)
    code: str  # expected diagnostic code
    field: str | None = None  # expected field path (None: not asserted)
    contract: str = ""  # key into CONTRACTS; defaults to the format's base contract
    heavy: bool = False  # claims huge sizes: also run in a subprocess under a memory limit
    size: int | None = None  # write `data` and extend the file with a hole to this size

    @property
    def contract_key(self) -> str:
        return self.contract or self.format

    @property
    def suffix(self) -> str:
        return ".gguf" if self.format == "gguf" else ".safetensors"


# --- contracts ------------------------------------------------------------------------------------

MODEL_YAML = """\
charter: 1
kind: model
id: hostile
status: structural
description: The model the hostile corpus's base artifacts are (tests/hardening/corpus.py).
source: {repository: charter/hostile-corpus}
architecture: llama
family: hostile
"""


def _gguf_contract(contract_id: str, trailing: str) -> str:
    return f"""\
charter: 1
kind: artifact
id: {contract_id}
status: structural
model: hostile
format: gguf
container: {{version: 3, alignment: 32}}
identity:
  general.architecture: "{{model.architecture}}"
metadata:
  extra_keys: reject
  keys:
    general.name: {{type: string, value: {json.dumps(NAME_PAYLOAD)}}}
    test.u32: {{type: uint32, value: 42}}
    test.flag: {{type: bool, value: true}}
    test.bools: {{type: array, element: bool, length: 2, values: [true, false]}}
    test.strs: {{type: array, element: string, length: 2, values: ["a", "bc"]}}
    tokenizer.chat_template: {{type: string, sha256: {sha256(JINJA_PAYLOAD)}}}
tensors:
  - {{name: a, role: norm, shape: [32], codec: F32}}
  - {{name: b, role: norm, shape: [32], codec: F32}}
  - {{name: q, role: proj, shape: [32, 2], codec: Q8_0}}
codecs:
  F32: {{block: 1, bytes: 4}}
  Q8_0: {{block: 32, bytes: 34}}
layout: {{sorted: true, packed: true, trailing: {trailing}, padding: zero}}
"""


def _safetensors_contract(contract_id: str, header_aligned: bool) -> str:
    return f"""\
charter: 1
kind: artifact
id: {contract_id}
status: structural
model: hostile
format: safetensors
container: {{header_aligned: {str(header_aligned).lower()}}}
identity:
  general.architecture: "{{model.architecture}}"
  general.basename: "{{model.family}}"
metadata:
  extra_keys: reject
  keys:
    format: {{type: string, value: pt}}
    chat_template: {{type: string, sha256: {sha256(JINJA_PAYLOAD)}}}
tensors:
  - {{name: a, role: norm, shape: [8], codec: F32}}
  - {{name: b, role: norm, shape: [8], codec: F32}}
  - {{name: c, role: proj, shape: [2, 4], codec: BF16}}
codecs:
  F32: {{block: 1, bytes: 4}}
  BF16: {{block: 1, bytes: 2}}
layout: {{sorted: true, packed: true, trailing: reject, padding: zero}}
"""


# contract key -> (file name, text)
CONTRACTS: dict[str, tuple[str, str]] = {
    "gguf": ("hostile-gguf.yaml", _gguf_contract("hostile-gguf", "reject")),
    "gguf-trailing-alignment": ("hostile-gguf-ta.yaml", _gguf_contract("hostile-gguf-ta", "alignment")),
    "gguf-trailing-allow": ("hostile-gguf-tw.yaml", _gguf_contract("hostile-gguf-tw", "allow")),
    "safetensors": ("hostile-safetensors.yaml", _safetensors_contract("hostile-safetensors", True)),
    "safetensors-unaligned": ("hostile-safetensors-u.yaml", _safetensors_contract("hostile-safetensors-u", False)),
}


def write_contracts(root: Path) -> dict[str, Path]:
    """Write each artifact contract, with the model, into its own `root/<key>/specs/` tree (so
    `charter admit` loads just the two); contract key -> path."""
    out = {}
    for key, (name, text) in CONTRACTS.items():
        specs = root / key / "specs"
        (specs / "models").mkdir(parents=True, exist_ok=True)
        (specs / "artifacts").mkdir(parents=True, exist_ok=True)
        (specs / "models" / "hostile.yaml").write_text(MODEL_YAML, "utf-8")
        path = specs / "artifacts" / name
        path.write_text(text, "utf-8")
        out[key] = path
    return out


# --- GGUF: an explicit, field-recording writer ---------------------------------------------------


def u32(x: int) -> bytes:
    return struct.pack("<I", x)


def u64(x: int) -> bytes:
    return struct.pack("<Q", x)


def gstr(s: bytes | str) -> bytes:
    b = s.encode("utf-8") if isinstance(s, str) else s
    return u64(len(b)) + b


@dataclass(frozen=True)
class KV:
    key: bytes
    type: int
    value: bytes  # the serialized value (for arrays: element type, count, elements)
    elem_type: int | None = None  # arrays only: for field marks
    elems: tuple[bytes, ...] = ()  # arrays only: each serialized element

    @property
    def text(self) -> str:
        return self.key.decode("utf-8", "replace")


def kv_str(key: str, value: bytes | str) -> KV:
    return KV(key.encode(), STRING, gstr(value))


def kv_scalar(key: str, vtype: int, fmt: str, value) -> KV:
    return KV(key.encode(), vtype, struct.pack(fmt, value))


def kv_array(key: str, elem_type: int, elems: list[bytes], count: int | None = None) -> KV:
    n = len(elems) if count is None else count
    return KV(key.encode(), ARRAY, u32(elem_type) + u64(n) + b"".join(elems), elem_type, tuple(elems))


@dataclass(frozen=True)
class Tensor:
    name: bytes
    dims: tuple[int, ...]
    type: int
    offset: int
    n_dims: int | None = None  # None: len(dims)

    @property
    def text(self) -> str:
        return self.name.decode("utf-8", "replace")


@dataclass(frozen=True)
class GGUF:
    magic: bytes = b"GGUF"
    version: int = 3
    tensor_count: int | None = None
    kv_count: int | None = None
    kvs: tuple[KV, ...] = ()
    tensors: tuple[Tensor, ...] = ()
    alignment: int = 32  # of the padding the writer inserts, whatever general.alignment says
    data: bytes = b""
    trailing: bytes = b""

    def with_kv(self, key: str, new: KV | None) -> GGUF:
        """Replace (or, with None, drop) the pair whose key is `key`."""
        kvs = [k for k in self.kvs if k.key != key.encode()] if new is None else [
            new if k.key == key.encode() else k for k in self.kvs]
        assert new is None or new in kvs, key
        return replace(self, kvs=tuple(kvs))

    def with_tensor(self, which: str, **changes) -> GGUF:
        """Replace fields of the tensor named `which`."""
        assert any(t.name == which.encode() for t in self.tensors), which
        return replace(self, tensors=tuple(replace(t, **changes) if t.name == which.encode() else t
                                           for t in self.tensors))


@dataclass(frozen=True)
class Mark:
    """One field the writer wrote: [start, end), the field path the reader reports, and its kind."""

    start: int
    end: int
    field: str
    kind: str  # "fixed" | "str" | "elems" | "strelems" | "padding" | "data"
    count: int = 0  # "elems"/"strelems": the array's element count


def build_gguf(g: GGUF) -> tuple[bytes, list[Mark]]:
    out = bytearray()
    marks: list[Mark] = []

    def put(data: bytes, fld: str, kind: str = "fixed", count: int = 0) -> None:
        marks.append(Mark(len(out), len(out) + len(data), fld, kind, count))
        out.extend(data)

    put(g.magic, "header.magic")
    put(u32(g.version), "header.version")
    put(u64(len(g.tensors) if g.tensor_count is None else g.tensor_count), "header.tensor_count")
    put(u64(len(g.kvs) if g.kv_count is None else g.kv_count), "header.kv_count")
    for i, kv in enumerate(g.kvs):
        put(u64(len(kv.key)), f"kv[{i}].key")
        put(kv.key, f"kv[{i}].key", "str")
        f = f"metadata.{kv.text}"
        put(u32(kv.type), f)
        if kv.type == ARRAY and kv.elem_type is not None:
            put(kv.value[:12], f)
            count = struct.unpack_from("<Q", kv.value, 4)[0]
            if kv.elem_type == STRING:
                start = len(out)
                for j, e in enumerate(kv.elems):
                    put(e[:8], f"{f}[{j}]")
                    put(e[8:], f"{f}[{j}]", "str")
                marks.append(Mark(start, len(out), f, "strelems", count))
            else:
                put(kv.value[12:], f, "elems", count)
        elif kv.type == STRING:
            put(kv.value[:8], f)
            put(kv.value[8:], f, "str")
        else:
            put(kv.value, f)
    for i, t in enumerate(g.tensors):
        put(u64(len(t.name)), f"tensors[{i}].name")
        put(t.name, f"tensors[{i}].name", "str")
        f = f"tensors.{t.text}"
        put(u32(len(t.dims) if t.n_dims is None else t.n_dims), f"{f}.n_dims")
        put(b"".join(u64(d) for d in t.dims), f"{f}.dims")
        put(u32(t.type), f"{f}.type")
        put(u64(t.offset), f"{f}.offset")
    put(bytes(-len(out) % g.alignment), "padding", "padding")
    data_start = len(out)
    put(g.data, "data", "data")
    out.extend(g.trailing)
    marks.append(Mark(data_start, data_start, "data_offset", "data_offset"))
    return bytes(out), marks


def _seeded(n: int, seed: int) -> bytes:
    out = b""
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{len(out)}".encode()).digest()
    return out[:n]


def base_gguf_spec() -> GGUF:
    """The conforming GGUF: three tensors (two F32 rows of 32, one 32x2 Q8_0), seven kv pairs of
    every shape the reader treats differently (string, uint32, bool, bool and string arrays)."""
    kvs = (
        kv_str("general.architecture", "llama"),
        kv_str("general.name", NAME_PAYLOAD),
        kv_scalar("test.u32", UINT32, "<I", 42),
        kv_scalar("test.flag", BOOL, "<B", 1),
        kv_array("test.bools", BOOL, [b"\x01", b"\x00"]),
        kv_array("test.strs", STRING, [gstr("a"), gstr("bc")]),
        kv_str("tokenizer.chat_template", JINJA_PAYLOAD),
    )
    tensors = (
        Tensor(b"a", (32,), GGML_F32, 0),
        Tensor(b"b", (32,), GGML_F32, 128),
        Tensor(b"q", (32, 2), GGML_Q8_0, 256),
    )
    return GGUF(kvs=kvs, tensors=tensors, data=_seeded(256 + 68, 1))


def base_gguf() -> bytes:
    return build_gguf(base_gguf_spec())[0]


# --- safetensors ------------------------------------------------------------------------------------

ST_METADATA = {"format": "pt", "general.architecture": "llama", "general.basename": "hostile",
               "chat_template": JINJA_PAYLOAD}
ST_TENSORS = {
    "a": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]},
    "b": {"dtype": "F32", "shape": [8], "data_offsets": [32, 64]},
    "c": {"dtype": "BF16", "shape": [2, 4], "data_offsets": [64, 80]},
}
ST_DATA_LEN = 80


def st_header(metadata=ST_METADATA, tensors=None) -> dict:
    h = {"__metadata__": metadata} if metadata is not None else {}
    h.update(ST_TENSORS if tensors is None else tensors)
    return h


def st_file(header: dict | str | bytes, data: bytes | int = ST_DATA_LEN, *, pad: bool = True,
            length: int | None = None) -> bytes:
    """A safetensors file: u64 header length, the header (JSON text or raw bytes), the data."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    raw = header.encode("utf-8") if isinstance(header, str) else header
    if pad:
        raw += b" " * (-len(raw) % 8)
    if isinstance(data, int):
        data = _seeded(data, 2)
    return u64(len(raw) if length is None else length) + raw + data


def base_safetensors() -> bytes:
    return st_file(st_header())


def _st_tensors(**changes) -> dict:
    """ST_TENSORS with entries replaced (value dict) or removed (None)."""
    out = {}
    for k, v in ST_TENSORS.items():
        if k in changes:
            if changes[k] is not None:
                out[k] = changes[k]
        else:
            out[k] = v
    for k, v in changes.items():
        if k not in ST_TENSORS and v is not None:
            out[k] = v
    return out


def _entry(name: str, **changes) -> dict:
    return {**ST_TENSORS[name], **changes}


# --- GGUF cases -------------------------------------------------------------------------------------


def n2(n: int) -> str:
    """A size for a case name: powers of two (and 2**64-1) as such, the rest in decimal."""
    for k in range(8, 65):
        if n == 2**k:
            return f"2**{k}"
        if n == 2**k - 1 and k >= 32:
            return f"2**{k}-1"
        if n == 2**k + 1 and k >= 32:
            return f"2**{k}+1"
    return str(n)


def _g(name: str, klass: str, spec_or_bytes, code: str, fld: str | None = None, **kw) -> Case:
    data = spec_or_bytes if isinstance(spec_or_bytes, bytes) else build_gguf(spec_or_bytes)[0]
    return Case(f"gguf/{name}", klass, "gguf", data, code, fld, **kw)


def _gguf_cut_expectation(g: GGUF, marks: list[Mark], p: int) -> tuple[str, str]:
    """The diagnostic of the base file cut to its first `p` bytes (Note [Hostile corpus])."""
    if p < 24:
        m = next(m for m in marks if m.start <= p < m.end)
        return "CONTAINER_TRUNCATED", m.field
    left = p - 24
    tc, kc = len(g.tensors), len(g.kvs)
    if tc * 33 > left:
        return "CONTAINER_COUNT", "header.tensor_count"
    if kc * 14 > left - tc * 33:
        return "CONTAINER_COUNT", "header.kv_count"
    header_end = next(m.start for m in marks if m.kind == "padding")
    if p >= header_end:
        data_start = next(m.start for m in marks if m.kind == "data_offset")
        for t in g.tensors:
            if data_start + t.offset + _nbytes(t) > p:
                return "CONTAINER_EXTENT", f"tensors.{t.text}.offset"
        raise AssertionError("the whole file")
    arrays = [m for m in marks if m.kind in ("elems", "strelems") and m.start <= p < m.end]
    if arrays:
        m = arrays[0]
        per = 8 if m.kind == "strelems" else 1
        if m.count * per > p - m.start:
            return "CONTAINER_COUNT", m.field
    m = next(m for m in marks if m.start <= p < m.end and m.kind not in ("strelems",))
    return "CONTAINER_TRUNCATED", m.field


def _nbytes(t: Tensor) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n * 4 if t.type == GGML_F32 else n // 32 * 34


def gguf_truncations() -> list[Case]:
    """The base file cut at every structural boundary (and one byte into every field)."""
    g = base_gguf_spec()
    data, marks = build_gguf(g)
    cuts = set()
    for m in marks:
        cuts.update({m.start, m.start + 1, m.end - 1})
    cuts = sorted(c for c in cuts if 0 <= c < len(data))
    out = []
    for p in cuts:
        code, fld = _gguf_cut_expectation(g, marks, p)
        out.append(_g(f"truncated-at-{p}", "truncation", data[:p], code, fld))
    return out


def gguf_cases() -> list[Case]:
    g = base_gguf_spec()
    base = build_gguf(g)[0]
    T, C = "CONTAINER_TRUNCATED", "CONTAINER_COUNT"
    cases = gguf_truncations()
    add = cases.append

    # magic and version
    for name, magic in [("zeros", b"\0\0\0\0"), ("lowercase", b"gguf"), ("swapped", b"FUGG"),
                        ("ggml", b"lmgg"), ("ggjt", b"tjgg")]:
        add(_g(f"magic-{name}", "bad magic", replace(g, magic=magic), "CONTAINER_MAGIC", "header.magic"))
    add(_g("magic-zip-local-header", "bad magic", replace(g, magic=b"PK\x03\x04"), "CONTAINER_FORMAT", "format"))
    for v in (0, 1, 4, 0xFFFF, U64_MAX >> 32):
        add(_g(f"version-{v}", "version", replace(g, version=v), "CONTAINER_VERSION", "header.version"))
    for v in (2, 3):
        swapped = int.from_bytes(v.to_bytes(4, "little"), "big")
        add(_g(f"version-{v}-byte-swapped", "version", replace(g, version=swapped), "CONTAINER_VERSION",
               "header.version"))
    add(_g("version-2-in-a-v3-contract", "version", replace(g, version=2), "CONTAINER_VERSION",
           "container.version"))

    # counts far beyond the file
    for n in (10**6, 2**32, 2**61, 2**63, U64_MAX):
        add(_g(f"tensor-count-{n2(n)}", "counts", replace(g, tensor_count=n), C, "header.tensor_count", heavy=n > 2**32))
    for n in (10**6, 2**32, 2**60 + 1, 2**63, U64_MAX):
        add(_g(f"kv-count-{n2(n)}", "counts", replace(g, kv_count=n), C, "header.kv_count", heavy=n > 2**32))
    # counts that fit the file but lie. One tensor too many: the fourth info is read from the zero
    # padding, a name of length 0. One kv too many: the eighth pair is read from tensor a's info
    # (key "a", type 1 = its n_dims, an int8 = the low byte of its dim), so the first tensor info
    # starts 1 byte into that dim: 7 zero bytes and the zero byte of F32 make a name of length 0.
    # One tensor too few: the data section starts earlier and tensor q is missing.
    add(_g("tensor-count-plus-one", "counts", replace(g, tensor_count=4), "CONTAINER_TENSOR_NAME",
           "tensors[3].name"))
    add(_g("kv-count-plus-one", "counts", replace(g, kv_count=len(g.kvs) + 1), "CONTAINER_TENSOR_NAME",
           "tensors[0].name"))
    add(_g("tensor-count-minus-one", "counts", replace(g, tensor_count=2), "TENSOR_MISSING", "tensors.q"))

    # string lengths past EOF or near 2**64
    for n in (len(base), 2**32, 2**63, U64_MAX - 7, U64_MAX):
        key = KV(b"general.name", STRING, u64(n) + NAME_PAYLOAD.encode())
        add(_g(f"string-length-{n2(n)}", "string lengths", g.with_kv("general.name", key), T,
               "metadata.general.name", heavy=n > 2**32))
    for n in (2**40, U64_MAX):
        data = bytearray(base)
        struct.pack_into("<Q", data, 24, n)  # the first key's length
        add(_g(f"key-length-{n2(n)}", "string lengths", bytes(data), T, "kv[0].key", heavy=True))
        data = bytearray(base)
        struct.pack_into("<Q", data, _tensor_name_at(g, 0), n)
        add(_g(f"tensor-name-length-{n2(n)}", "string lengths", bytes(data), T, "tensors[0].name", heavy=True))
    strs = kv_array("test.strs", STRING, [u64(U64_MAX) + b"a", gstr("bc")])
    add(_g("string-element-length-2**64-1", "string lengths", g.with_kv("test.strs", strs), T,
           "metadata.test.strs[0]", heavy=True))
    strs = kv_array("test.strs", STRING, [gstr("a"), u64(2**62) + b"bc"])
    add(_g("string-element-length-2**62", "string lengths", g.with_kv("test.strs", strs), T,
           "metadata.test.strs[1]", heavy=True))

    # array counts near 2**62 (and counts whose byte size wraps 64 bits: 2**62+1 int32s are 4 bytes
    # modulo 2**64, 2**61 strings need 0 bytes modulo 2**64)
    for etype, ename, elem, n in [(UINT8, "uint8", b"\x01", 2**62), (BOOL, "bool", b"\x01", 2**62),
                                  (INT32, "int32", u32(1), 2**62 + 1), (UINT64, "uint64", u64(1), 2**61),
                                  (STRING, "string", gstr("a"), 2**61), (STRING, "string", gstr("a"), 2**62),
                                  (UINT8, "uint8", b"\x01", U64_MAX)]:
        arr = kv_array("test.bools", etype, [elem, elem], count=n)
        add(_g(f"array-count-{ename}-{n2(n)}", "array counts", g.with_kv("test.bools", arr), C,
               "metadata.test.bools", heavy=True))

    # unknown value type codes
    for code in (13, 255, 2**31, 2**32 - 1):
        add(_g(f"value-type-{code}", "value types", g.with_kv("test.u32", replace(g.kvs[2], type=code)),
               "CONTAINER_VALUE_TYPE", "metadata.test.u32"))
        arr = KV(b"test.bools", ARRAY, u32(code) + u64(2) + b"\x01\x00")
        add(_g(f"array-element-type-{code}", "value types", g.with_kv("test.bools", arr),
               "CONTAINER_VALUE_TYPE", "metadata.test.bools"))

    # nested and deeply nested arrays
    inner = u32(UINT8) + u64(2) + b"\x01\x00"
    add(_g("array-of-arrays", "nested arrays",
           g.with_kv("test.bools", KV(b"test.bools", ARRAY, u32(ARRAY) + u64(1) + inner)),
           "CONTAINER_ARRAY", "metadata.test.bools"))
    deep = inner
    for _ in range(10_000):
        deep = u32(ARRAY) + u64(1) + deep
    add(_g("arrays-nested-10000-deep", "nested arrays", g.with_kv("test.bools", KV(b"test.bools", ARRAY, deep)),
           "CONTAINER_ARRAY", "metadata.test.bools"))
    add(_g("array-of-arrays-count-2**62", "nested arrays",
           g.with_kv("test.bools", KV(b"test.bools", ARRAY, u32(ARRAY) + u64(2**62) + inner)),
           "CONTAINER_ARRAY", "metadata.test.bools", heavy=True))

    # bools other than 0/1
    for b in (2, 0x80, 0xFF):
        add(_g(f"bool-{b}", "bools", g.with_kv("test.flag", kv_scalar("test.flag", BOOL, "<B", b)),
               "CONTAINER_BOOL", "metadata.test.flag"))
        add(_g(f"bool-element-{b}", "bools",
               g.with_kv("test.bools", kv_array("test.bools", BOOL, [b"\x01", bytes([b])])),
               "CONTAINER_BOOL", "metadata.test.bools[1]"))

    # keys: empty, duplicate, not UTF-8
    add(_g("key-empty", "keys", g.with_kv("test.u32", replace(g.kvs[2], key=b"")), "CONTAINER_KEY", "kv[2].key"))
    add(_g("key-duplicate", "keys", g.with_kv("test.u32", replace(g.kvs[2], key=b"general.name")),
           "CONTAINER_DUPLICATE_KEY", "kv[2].key"))
    for name, key in [("invalid-byte", b"test.\xff"), ("overlong-slash", b"test.\xc0\xaf"),
                      ("surrogate", b"test.\xed\xa0\x80"), ("truncated-sequence", b"test.\xe2\x82"),
                      ("beyond-u10ffff", b"test.\xf4\x90\x80\x80")]:
        add(_g(f"key-not-utf8-{name}", "keys", g.with_kv("test.u32", replace(g.kvs[2], key=key)),
               "CONTAINER_KEY", "kv[2].key"))
    add(_g("string-value-not-utf8", "keys", g.with_kv("general.name", kv_str("general.name", b"\xff\xfe")),
           "CONTAINER_STRING", "metadata.general.name"))
    add(_g("string-element-not-utf8", "keys",
           g.with_kv("test.strs", kv_array("test.strs", STRING, [gstr("a"), gstr(b"b\xc3")])),
           "CONTAINER_STRING", "metadata.test.strs[1]"))
    add(_g("unexpected-key", "keys", replace(g, kvs=g.kvs + (kv_str("x.evil", "1"),)),
           "METADATA_UNEXPECTED", "metadata.x.evil"))
    # NUL inside a key is valid UTF-8: another key, never truncated to "test.u32" (missing comes
    # before unexpected: Note [Ordered admission])
    add(_g("key-with-nul", "keys", g.with_kv("test.u32", replace(g.kvs[2], key=b"test.u32\0")),
           "METADATA_MISSING", "metadata.test.u32"))

    # general.alignment
    def align(kv: KV) -> GGUF:
        return replace(g, kvs=g.kvs + (kv,))

    for tname, kv in [("uint64", kv_scalar("general.alignment", UINT64, "<Q", 32)),
                      ("int32", kv_scalar("general.alignment", INT32, "<i", 32)),
                      ("string", kv_str("general.alignment", "32")),
                      ("float32", kv_scalar("general.alignment", FLOAT32, "<f", 32.0)),
                      ("array", kv_array("general.alignment", UINT32, [u32(32)]))]:
        add(_g(f"alignment-type-{tname}", "alignment", align(kv), "CONTAINER_ALIGNMENT",
               "metadata.general.alignment"))
    for a in (0, 3, 48, 2**31, 2**32 - 1):
        add(_g(f"alignment-{a}", "alignment", align(kv_scalar("general.alignment", UINT32, "<I", a)),
               "CONTAINER_ALIGNMENT", "metadata.general.alignment"))
    add(_g("alignment-64-in-a-32-contract", "alignment",
           replace(align(kv_scalar("general.alignment", UINT32, "<I", 64)), alignment=64), "CONTAINER_ALIGNMENT",
           "container.alignment"))
    add(_g("alignment-64-data-at-32", "alignment", align(kv_scalar("general.alignment", UINT32, "<I", 64)),
           "CONTAINER_EXTENT", "tensors.q.offset"))

    # tensor names
    add(_g("tensor-name-duplicate", "tensor names", g.with_tensor("b", name=b"a"), "CONTAINER_TENSOR_NAME",
           "tensors[1].name"))
    add(_g("tensor-name-empty", "tensor names", g.with_tensor("b", name=b""), "CONTAINER_TENSOR_NAME",
           "tensors[1].name"))
    for n in (64, 65, 4096, 2**20):
        add(_g(f"tensor-name-{n2(n)}-bytes", "tensor names", g.with_tensor("b", name=b"b" * n),
               "CONTAINER_TENSOR_NAME", "tensors[1].name"))
    add(_g("tensor-name-not-utf8", "tensor names", g.with_tensor("b", name=b"b\xff"), "CONTAINER_TENSOR_NAME",
           "tensors[1].name"))
    add(_g("tensor-name-with-nul", "tensor names", g.with_tensor("b", name=b"b\0"), "TENSOR_MISSING",
           "tensors.b"))
    extra = replace(g, tensors=g.tensors + (Tensor(b"z", (32,), GGML_F32, 352),), data=g.data + bytes(28) + _seeded(128, 3))
    add(_g("tensor-unexpected", "tensor names", extra, "TENSOR_UNEXPECTED", "tensors.z"))

    # rank and dims
    for n in (0, 5, 2**32 - 1):
        add(_g(f"n-dims-{n}", "rank", g.with_tensor("a", n_dims=n), "CONTAINER_TENSOR_RANK", "tensors.a.n_dims"))
    add(_g("n-dims-2-of-1", "rank", g.with_tensor("a", n_dims=2, dims=(32, 1)), "TENSOR_RANK", "tensors.a.rank"))
    for name, dims in [("zero", (0,)), ("zero-second", (32, 0)), ("2**63", (2**63,)), ("2**64-1", (U64_MAX,))]:
        add(_g(f"dim-{name}", "dims", g.with_tensor("a", dims=dims), "CONTAINER_TENSOR_DIM", "tensors.a.dims"))
    for name, dims in [("elements-2**64", (2**32, 2**32)), ("elements-2**63", (2**32, 2**31)),
                       ("elements-2**64-over-4-dims", (2**16,) * 4), ("elements-wrap-to-32", (32, 2**59, 2**5))]:
        add(_g(f"dims-{name}", "overflow", g.with_tensor("a", dims=dims), "CONTAINER_OVERFLOW", "tensors.a.dims"))
    # element counts that fit int64 but whose byte size does not fit 64 bits (F32: 4 bytes each)
    add(_g("bytes-2**64-f32", "overflow", g.with_tensor("a", dims=(2**31, 2**31)), "CONTAINER_OVERFLOW",
           "tensors.a.dims"))
    add(_g("bytes-2**64-i64", "overflow", g.with_tensor("a", dims=(2**61,), type=GGML_I64), "CONTAINER_OVERFLOW",
           "tensors.a.dims"))
    add(_g("bytes-fit-but-past-eof", "overflow", g.with_tensor("a", dims=(2**30, 2**30)), "CONTAINER_EXTENT",
           "tensors.a.offset"))

    # ggml types
    for t in (4, 5, 31, 36):
        add(_g(f"ggml-type-removed-{t}", "ggml types", g.with_tensor("a", type=t), "CONTAINER_TENSOR_TYPE",
               "tensors.a.type"))
    for t in (42, 1000, 2**32 - 1):
        add(_g(f"ggml-type-unknown-{t}", "ggml types", g.with_tensor("a", type=t), "CONTAINER_TENSOR_TYPE",
               "tensors.a.type"))
    add(_g("ggml-type-f16-for-f32", "ggml types", g.with_tensor("b", type=GGML_F16), "TENSOR_CODEC",
           "tensors.b.codec"))
    for w in (1, 16, 33, 48):
        add(_g(f"row-{w}-not-a-q8_0-block", "block size", g.with_tensor("q", dims=(w, 2)),
               "CONTAINER_TENSOR_BLOCK", "tensors.q.dims"))

    # offsets: misaligned, out of order, overlapping, aliased, gapped, past EOF
    for off in (1, 16, 127):
        add(_g(f"offset-misaligned-{off}", "offsets", g.with_tensor("a", offset=off), "CONTAINER_OFFSET",
               "tensors.a.offset"))
    add(_g("offsets-out-of-order", "offsets", g.with_tensor("a", offset=128).with_tensor("b", offset=0),
           "LAYOUT_ORDER", "tensors.b.offset"))
    add(_g("offsets-overlapping", "offsets", g.with_tensor("b", offset=96), "LAYOUT_OVERLAP", "tensors.b.offset"))
    add(_g("offsets-aliased", "offsets", g.with_tensor("b", offset=0), "LAYOUT_OVERLAP", "tensors.b.offset"))
    # sorted by (start, end), q [0, 68) comes first and a [0, 128) is the first to overlap it
    add(_g("offsets-all-aliased", "offsets", g.with_tensor("b", offset=0).with_tensor("q", offset=0),
           "LAYOUT_OVERLAP", "tensors.a.offset"))
    add(_g("offsets-gap", "offsets", replace(g.with_tensor("q", offset=288), data=g.data[:256] + bytes(32) + g.data[256:]),
           "LAYOUT_GAP", "tensors.q.offset"))
    for off in (512, 2**32, 2**63, 2**64 - 32):
        add(_g(f"offset-past-eof-{n2(off)}", "offsets", g.with_tensor("q", offset=off), "CONTAINER_EXTENT",
               "tensors.q.offset"))

    # data truncated, trailing bytes (layout.trailing: reject in the base contract)
    add(_g("data-truncated-by-1", "data", replace(g, data=g.data[:-1]), "CONTAINER_EXTENT", "tensors.q.offset"))
    add(_g("data-missing", "data", replace(g, data=b""), "CONTAINER_EXTENT", "tensors.a.offset"))
    for n in (1, 28, 4096):
        add(_g(f"trailing-{n2(n)}-bytes", "trailing", replace(g, trailing=bytes(n)), "LAYOUT_TRAILING", "layout.trailing"))
    add(_g("trailing-beyond-alignment", "trailing", replace(g, trailing=bytes(29)), "LAYOUT_TRAILING",
           "layout.trailing", contract="gguf-trailing-alignment"))
    add(_g("trailing-appended-gguf", "trailing", replace(g, trailing=base), "LAYOUT_TRAILING",
           "layout.trailing", contract="gguf-trailing-alignment"))

    # a header over the 64 MiB cap: a 70 MiB string value, inside a (sparse) 72 MiB file
    big = KV(b"general.name", STRING, u64(70 * 2**20) + b"x")
    add(_g("header-over-64-mib-cap", "counts", g.with_kv("general.name", big), "CONTAINER_HEADER",
           "metadata.general.name", heavy=True, size=72 * 2**20))
    return cases


def _tensor_name_at(g: GGUF, i: int) -> int:
    _, marks = build_gguf(g)
    return next(m.start for m in marks if m.field == f"tensors[{i}].name")


# --- safetensors cases ----------------------------------------------------------------------------


def _s(name: str, klass: str, data: bytes, code: str, fld: str | None = None, **kw) -> Case:
    return Case(f"safetensors/{name}", klass, "safetensors", data, code, fld, **kw)


def safetensors_truncations() -> list[Case]:
    data = base_safetensors()
    n = struct.unpack_from("<Q", data)[0]
    cuts = sorted({0, 1, 4, 7, 8, 9, 8 + n // 2, 8 + n - 1} | {8 + n + e for t in ST_TENSORS.values()
                                                              for e in t["data_offsets"]} | {len(data) - 1})
    out = []
    for p in cuts:
        if p >= len(data):
            continue
        if p < 8 + n:
            code, fld = "CONTAINER_TRUNCATED", "header.length"
        else:
            first = next(k for k, t in ST_TENSORS.items() if t["data_offsets"][1] > p - 8 - n)
            code, fld = "CONTAINER_EXTENT", f"tensors.{first}.data_offsets"
        out.append(_s(f"truncated-at-{p}", "truncation", data[:p], code, fld))
    return out


def safetensors_cases() -> list[Case]:
    H, J, O, X = "CONTAINER_HEADER", "CONTAINER_JSON", "CONTAINER_OFFSET", "CONTAINER_EXTENT"
    base = base_safetensors()
    cases = safetensors_truncations()
    add = cases.append
    header_text = json.dumps(st_header(), separators=(",", ":"))

    # header length: huge, past the file, over the cap, not a multiple of 8
    for n in (U64_MAX, 2**63, 100_000_001, 2**32):
        add(_s(f"header-length-{n2(n)}", "header length", st_file(st_header(), length=n), H, "header.length",
               heavy=True))
    add(_s("header-length-past-file", "header length", st_file(st_header(), length=len(base)),
           "CONTAINER_TRUNCATED", "header.length"))
    add(_s("header-length-100000000-past-file", "header length", st_file(st_header(), length=100_000_000),
           "CONTAINER_TRUNCATED", "header.length", heavy=True))
    add(_s("header-length-zero", "header length", st_file("", pad=False), J, "header"))
    unpadded = st_file(header_text + " " * (1 + (len(header_text) % 8 == 7)), pad=False)
    assert (len(unpadded) - 8) % 8
    add(_s("header-length-not-multiple-of-8", "header length", unpadded, H, "container.header_aligned"))

    # not UTF-8, not JSON, not an object
    add(_s("header-not-utf8", "json", st_file(header_text.encode()[:-1] + b"\xff}"), J, "header"))
    add(_s("header-overlong-utf8", "json",
           st_file(header_text.replace('"pt"', '"p\\u0074"').encode().replace(b"p\\u0074", b"p\xc1\xb4")),
           J, "header"))
    for name, text in [("garbage", "hello world"), ("truncated-json", header_text[:-1]),
                       ("trailing-garbage", header_text + "x"), ("two-objects", header_text + "{}"),
                       ("nan", header_text.replace('[0,32]', '[0,NaN]')),
                       ("infinity", header_text.replace('[0,32]', '[0,Infinity]')),
                       ("lone-surrogate-key", header_text.replace('"a":', '"\\ud800":')),
                       ("huge-integer", header_text.replace('[0,32]', '[0,' + "9" * 5000 + ']')),
                       ("nested-100000-deep", header_text[:-1] + ',"z":' + "[" * 100_000 + "]" * 100_000 + "}"),
                       ("nul-byte", header_text.replace('"pt"', '"pt"\0'))]:
        add(_s(f"not-json-{name}", "json", st_file(text), J, None))
    for name, text in [("array", "[]"), ("string", '"x"'), ("number", "1"), ("null", "null"), ("true", "true")]:
        add(_s(f"not-an-object-{name}", "json", st_file(text), J, "header"))

    # duplicates: tensor keys, __metadata__, keys inside an entry or the metadata
    dup_a = header_text.replace('"b":', '"a":')
    add(_s("duplicate-tensor-key", "duplicates", st_file(dup_a), "CONTAINER_DUPLICATE_KEY", "tensors.a"))
    meta_json = json.dumps(ST_METADATA, separators=(",", ":"))
    add(_s("duplicate-metadata", "duplicates",
           st_file(header_text[:-1] + ',"__metadata__":' + meta_json + "}"), "CONTAINER_DUPLICATE_KEY", "metadata"))
    add(_s("duplicate-metadata-key", "duplicates",
           st_file(header_text.replace('"format":"pt"', '"format":"pt","format":"pt"')),
           "CONTAINER_DUPLICATE_KEY", "metadata"))
    add(_s("duplicate-entry-field", "duplicates",
           st_file(header_text.replace('"dtype":"F32"', '"dtype":"F32","dtype":"F32"', 1)),
           "CONTAINER_DUPLICATE_KEY", "tensors.a"))

    # __metadata__ as a tensor; metadata values that are not strings
    add(_s("tensor-named-metadata", "metadata",
           st_file(st_header(metadata=None, tensors={"__metadata__": ST_TENSORS["a"], **_st_tensors(a=None)})),
           "CONTAINER_METADATA", "metadata.shape"))
    for name, value in [("int", 1), ("float", 1.5), ("null", None), ("bool", True), ("list", ["pt"]),
                        ("object", {"x": "y"})]:
        add(_s(f"metadata-value-{name}", "metadata", st_file(st_header(metadata={**ST_METADATA, "format": value})),
               "CONTAINER_METADATA", "metadata.format"))
    add(_s("metadata-not-an-object", "metadata", st_file(st_header(metadata=["format", "pt"])),
           "CONTAINER_METADATA", "metadata"))
    add(_s("metadata-lone-surrogate-value", "metadata",
           st_file(header_text.replace('"pt"', '"\\udc00"')), J, "metadata.format"))

    # dtypes
    for name, dtype in [("F128", "F128"), ("lowercase", "f32"), ("empty", ""), ("int", 7), ("null", None),
                        ("list", ["F32"])]:
        add(_s(f"dtype-{name}", "dtype", st_file(st_header(tensors=_st_tensors(a=_entry("a", dtype=dtype)))),
               "CONTAINER_DTYPE", "tensors.a.dtype"))

    # entries: extra fields, missing fields, not an object
    add(_s("entry-extra-field", "entry", st_file(st_header(tensors=_st_tensors(a={**ST_TENSORS["a"], "x": 1}))),
           H, "tensors.a.x"))
    add(_s("entry-missing-data-offsets", "entry",
           st_file(st_header(tensors=_st_tensors(a={"dtype": "F32", "shape": [8]}))), H, "tensors.a.data_offsets"))
    add(_s("entry-not-an-object", "entry", st_file(st_header(tensors=_st_tensors(a=[0, 32]))), H, "tensors.a"))
    add(_s("shape-not-a-list", "entry", st_file(st_header(tensors=_st_tensors(a=_entry("a", shape=8)))), H,
           "tensors.a.shape"))

    # data_offsets
    for name, offs in [("arity-1", [0]), ("arity-3", [0, 32, 64]), ("arity-0", []), ("negative", [-32, 0]),
                       ("float", [0.0, 32.0]), ("string", ["0", "32"]), ("2**64", [0, 2**64]),
                       ("bool", [False, 32]), ("null", None), ("reversed", [32, 0])]:
        add(_s(f"data-offsets-{name}", "data_offsets",
               st_file(st_header(tensors=_st_tensors(a=_entry("a", data_offsets=offs)))), O, "tensors.a.data_offsets"))
    add(_s("data-offsets-past-data", "data_offsets",
           st_file(st_header(tensors=_st_tensors(c=_entry("c", data_offsets=[2**40, 2**40 + 16])))), X,
           "tensors.c.data_offsets"))
    add(_s("data-offsets-past-data-2**64", "data_offsets",
           st_file(st_header(tensors=_st_tensors(c=_entry("c", data_offsets=[U64_MAX - 16, U64_MAX])))), X,
           "tensors.c.data_offsets"))
    add(_s("data-offsets-not-dtype-x-shape", "data_offsets",
           st_file(st_header(tensors=_st_tensors(c=_entry("c", shape=[2, 5])))), X, "tensors.c.data_offsets"))
    add(_s("data-offsets-f4-odd-elements", "data_offsets",
           st_file(st_header(tensors=_st_tensors(c=_entry("c", dtype="F4", shape=[3], data_offsets=[64, 66])))),
           X, "tensors.c.shape"))

    # shapes
    for name, shape, code in [("elements-2**64", [2**32, 2**32], "CONTAINER_OVERFLOW"),
                              ("elements-2**64-then-zero", [2**40, 2**40, 0], "CONTAINER_OVERFLOW"),
                              ("bits-2**67", [2**62], "CONTAINER_OVERFLOW"),
                              ("negative-dim", [-8], "CONTAINER_TENSOR_DIM"),
                              ("float-dim", [8.0], "CONTAINER_TENSOR_DIM"),
                              ("bool-dim", [True], "CONTAINER_TENSOR_DIM"),
                              ("string-dim", ["8"], "CONTAINER_TENSOR_DIM")]:
        add(_s(f"shape-{name}", "shapes", st_file(st_header(tensors=_st_tensors(a=_entry("a", shape=shape)))), code,
               "tensors.a.shape"))

    # extents: overlapping, gapped, trailing, aliased, not starting at 0
    add(_s("extents-overlapping", "extents", st_file(st_header(tensors=_st_tensors(
        b=_entry("b", data_offsets=[16, 48]), c=_entry("c", data_offsets=[48, 64]))), 64), X, "tensors.b.data_offsets"))
    add(_s("extents-aliased", "extents", st_file(st_header(tensors=_st_tensors(
        b=_entry("b", data_offsets=[0, 32]), c=_entry("c", data_offsets=[32, 48]))), 48), X, "tensors.b.data_offsets"))
    add(_s("extents-gap", "extents", st_file(st_header(tensors=_st_tensors(
        c=_entry("c", data_offsets=[72, 88]))), 88), X, "tensors.c.data_offsets"))
    add(_s("extents-not-from-zero", "extents", st_file(st_header(tensors=_st_tensors(
        a=_entry("a", data_offsets=[80, 112]))), 112), X, "tensors.b.data_offsets"))
    for n in (1, 8, 4096):
        add(_s(f"trailing-{n2(n)}-bytes", "extents", base + bytes(n), X, "tensors"))
    add(_s("trailing-appended-file", "extents", base + base, X, "tensors"))

    cases += safetensors_number_cases(header_text)

    # contract-level (not container) findings on otherwise valid files
    add(_s("out-of-order-entries", "extents", st_file(st_header(tensors=_st_tensors(
        a=_entry("a", data_offsets=[32, 64]), b=_entry("b", data_offsets=[0, 32])))), "LAYOUT_ORDER",
        "tensors.b.offset"))
    add(_s("metadata-extra-key", "metadata", st_file(st_header(metadata={**ST_METADATA, "x": "y"})),
           "METADATA_UNEXPECTED", "metadata.x"))
    add(_s("header-over-cap-declared", "header length",
           st_file(header_text, length=100_000_008, data=b""), H, "header.length", heavy=True))
    return cases


# Other spellings of the integers the base file needs (Note [Safetensors numbers] in
# charter/formats/safetensors.py). Each means the right value to a lax reader (Python's json reads
# `-0` as 0; `8.0 == 8`) and the crate refuses each; `+`, leading zeros and hex are not JSON at all.
_A_ENTRY = '"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}'
_NUMBER_PLACES = {  # place -> a's entry with %s for the number (it needs 8, 0 and 32)
    "dim": '"a":{"dtype":"F32","shape":[%s],"data_offsets":[0,32]}',
    "begin": '"a":{"dtype":"F32","shape":[8],"data_offsets":[%s,32]}',
    "end": '"a":{"dtype":"F32","shape":[8],"data_offsets":[0,%s]}',
}
_NUMBER_CODES = {"dim": ("CONTAINER_TENSOR_DIM", "tensors.a.shape"),
                 "begin": ("CONTAINER_OFFSET", "tensors.a.data_offsets"),
                 "end": ("CONTAINER_OFFSET", "tensors.a.data_offsets")}
NUMBER_SPELLINGS = {  # place -> spellings of its number that JSON allows but the format does not
    "dim": ["8.0", "8e0", "8E0", "8e+0", "0.8e1", "80e-1", "8.000"],
    "begin": ["-0", "0.0", "-0.0", "0e0", "0E0", "0e-5", "-0e0"],
    "end": ["32.0", "3.2e1", "32E0", "320e-1", "3.2E+1"],
}
NOT_JSON_SPELLINGS = {"dim": ["+8", "08", "0x8", "8.", ".8"], "begin": ["+0", "00", "-00"],
                      "end": ["+32", "032", "0032"]}
OUT_OF_RANGE = {  # numbers no u64 holds: (name, spelling, code)
    "dim": [("minus-8", "-8", "CONTAINER_TENSOR_DIM"), ("1e400", "1e400", "CONTAINER_TENSOR_DIM"),
            ("2**64", str(2**64), "CONTAINER_OVERFLOW"), ("10**40", str(10**40), "CONTAINER_OVERFLOW")],
    "end": [("minus-32", "-32", "CONTAINER_OFFSET"), ("1e400", "1e400", "CONTAINER_OFFSET"),
            ("2**64", str(2**64), "CONTAINER_OFFSET"), ("32e999999999", "32e999999999", "CONTAINER_OFFSET")],
}
METADATA_NUMBERS = ["-0", "0", "1", "1e2", "1E2", "0.0", "1e400", str(2**64)]


def _spelled(spelling: str) -> str:
    """A case name for a spelling: a leading sign as a word."""
    return {"-": "minus-", "+": "plus-"}.get(spelling[0], spelling[0]) + spelling[1:]


def safetensors_number_cases(header_text: str) -> list[Case]:
    assert header_text.count(_A_ENTRY) == 1
    out = []

    def add(name, text, code, fld):
        out.append(_s(name, "numbers", st_file(text), code, fld))

    for place, template in _NUMBER_PLACES.items():
        code, fld = _NUMBER_CODES[place]
        for spelling in NUMBER_SPELLINGS[place]:
            add(f"number-{place}-{_spelled(spelling)}", header_text.replace(_A_ENTRY, template % spelling),
                code, fld)
        for spelling in NOT_JSON_SPELLINGS[place]:
            add(f"number-{place}-{_spelled(spelling)}", header_text.replace(_A_ENTRY, template % spelling),
                "CONTAINER_JSON", "header")
        for name, spelling, range_code in OUT_OF_RANGE.get(place, ()):
            add(f"number-{place}-{name}", header_text.replace(_A_ENTRY, template % spelling), range_code, fld)
    # -0 as a dim, where the tensor needs a 0 (an extra empty tensor: a lax reader reaches the contract)
    empty = '"z":{"dtype":"F32","shape":[4,-0],"data_offsets":[80,80]}'
    add("number-dim-minus-0", header_text[:-1] + "," + empty + "}", "CONTAINER_TENSOR_DIM", "tensors.z.shape")
    # a dim no u64 holds after a 0: the element count stays 0, the dim is still out of range
    past = f'"z":{{"dtype":"F32","shape":[0,{2**64}],"data_offsets":[80,80]}}'
    add("number-dim-2**64-after-0", header_text[:-1] + "," + past + "}", "CONTAINER_OVERFLOW", "tensors.z.shape")
    for spelling in METADATA_NUMBERS:
        add(f"number-metadata-{_spelled(spelling)}", header_text.replace('"format":"pt"', f'"format":{spelling}'),
            "CONTAINER_METADATA", "metadata.format")
    for spelling in ("+1", "01"):
        add(f"number-metadata-{_spelled(spelling)}", header_text.replace('"format":"pt"', f'"format":{spelling}'),
            "CONTAINER_JSON", "header")
    return out


# --- other formats ---------------------------------------------------------------------------------
# Real bytes of the files users hand charter by mistake (Note [Format sniff] in
# charter/formats/sniff.py), each written by the writer that makes it.


def torch_zip() -> bytes:
    """The layout torch.save has written since 1.6: an uncompressed zip of archive/data.pkl (the
    pickled state dict), archive/version, archive/byteorder and one storage per tensor."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle.dumps({"model.embed_tokens.weight": ("storage", "0")}, protocol=2))
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/data/0", bytes(64))
        z.writestr("archive/version", "3\n")
    return buf.getvalue()


def empty_zip() -> bytes:
    buf = io.BytesIO()
    zipfile.ZipFile(buf, "w").close()
    return buf.getvalue()


def legacy_torch_pickle() -> bytes:
    """torch.save's legacy format (before 1.6, and _use_new_zipfile_serialization=False): pickles
    in a row, the first being its magic number, protocol 2."""
    return b"".join(pickle.dumps(x, protocol=2) for x in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}))


def safetensors_index() -> bytes:
    """model.safetensors.index.json as transformers writes it (json.dumps, indent=2, sorted)."""
    index = {"metadata": {"total_size": 269060552},
             "weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors",
                            "model.embed_tokens.weight": "model-00001-of-00002.safetensors"}}
    return (json.dumps(index, indent=2, sort_keys=True) + "\n").encode()


def config_json_with_bom() -> bytes:
    return b"\xef\xbb\xbf" + json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 576}).encode()


def ctranslate2_model_bin() -> bytes:
    """A CTranslate2 model.bin (ctranslate2/specs/model_spec.py, binary version 6): the version, the
    spec name as u16 length + NUL-terminated text, the revision, then the variables (name, rank,
    shape, dtype id, byte count, bytes). Its first 8 bytes read as a u64 are 7518478154457939974."""
    def string(text: str) -> bytes:
        return struct.pack("<H", len(text) + 1) + text.encode() + b"\0"
    var = string("encoder/conv1/weight") + struct.pack("<B", 1) + struct.pack("<I", 4) + struct.pack("<BI", 0, 16)
    return struct.pack("<I", 6) + string("WhisperSpec") + struct.pack("<II", 3, 1) + var + bytes(16)


OTHER_FORMATS = {  # name -> (bytes, what the sniff says)
    "zip-torch-save": (torch_zip, "zip"),
    "zip-empty": (empty_zip, "zip"),
    "pickle-legacy-torch-save": (legacy_torch_pickle, "pickle"),
    "pickle-protocol-5": (lambda: pickle.dumps({"a": 1}, protocol=5), "pickle"),
    "json-safetensors-index": (safetensors_index, "json"),
    "json-config-with-bom": (config_json_with_bom, "json"),
    "ctranslate2-model-bin": (ctranslate2_model_bin, "unknown"),
}


def format_cases() -> list[Case]:
    """Every other format under both contracts, and each of GGUF and safetensors under the other's:
    CONTAINER_FORMAT. (Under a GGUF contract a file of no known format is CONTAINER_MAGIC, GGUF's
    own signature check.)"""
    out = [_g("format-safetensors", "format", base_safetensors(), "CONTAINER_FORMAT", "format"),
           _s("format-gguf", "format", base_gguf(), "CONTAINER_FORMAT", "format")]
    for name, (make, found) in OTHER_FORMATS.items():
        data = make()
        out.append(_s(f"format-{name}", "format", data, "CONTAINER_FORMAT", "format"))
        if found == "unknown":
            out.append(_g(f"format-{name}", "format", data, "CONTAINER_MAGIC", "header.magic"))
        else:
            out.append(_g(f"format-{name}", "format", data, "CONTAINER_FORMAT", "format"))
    return out


def all_cases() -> list[Case]:
    cases = gguf_cases() + safetensors_cases() + format_cases()
    names = [c.name for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, dupes
    return cases


def write_case(case: Case, directory: Path) -> Path:
    path = directory / (case.name.replace("/", "__") + case.suffix)
    with open(path, "wb") as f:
        f.write(case.data)
        if case.size is not None:
            f.truncate(case.size)
    return path
