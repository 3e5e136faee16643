"""Item 3 of issue 12: what a header can cost is bounded by the readers' limits (Note [Reader
limits] in charter/formats/gguf.py, Notes [JSON structure limit] and [JSON member limit] in
charter/formats/safetensors.py).

Each limit is checked at its boundary in both engines: a file holding exactly as many records as
the limit allows passes the reader (it is rejected later, by the contract), one more is rejected
by the reader with its CONTAINER_* diagnostic, at the same field and offset in both engines (the
old readers read the records and let the contract reject them: METADATA_UNEXPECTED and friends).
No CPU time is asserted here (bench/hostile.py --cost measures it); memory is, with tracemalloc.
"""

from __future__ import annotations

import re
import tracemalloc

import pytest

from charter.admission.view import parse_view
from charter.diagnostics import CharterError, Stage
from charter.formats import gguf, safetensors
from tests.conftest import ROOT
from tests.hardening import costly
from tests.hardening.corpus import STRING, u64

KV_ROOM = costly.KV_LIMIT - costly.GGUF_BASE_KVS
TENSOR_ROOM = costly.TENSOR_LIMIT - costly.GGUF_BASE_TENSORS
ST_ROOM = (costly.JSON_STRUCTURE_LIMIT - costly.ST_BASE_STRUCTURE) // 2
MEMBER_ROOM = costly.JSON_MEMBER_LIMIT - costly.ST_BASE_MEMBERS
SHIPPED = {"gguf": "tiny-llama-gguf", "safetensors": "tiny-llama-safetensors"}


def extra_strings(n: int) -> bytes:
    """The base file with an unpinned string array of `n` empty strings after its test.strs (2)."""
    return costly.gguf(kvs=[costly._array(b"~strs", STRING, n, u64(0) * n)])


# (name, bytes, size or None, expected reader diagnostic (code, field, offset) or None: read)
BOUNDARIES = [
    ("kvs-at-limit", lambda: costly.many_kvs(KV_ROOM), None, None),
    ("kvs-over-limit", lambda: costly.many_kvs(KV_ROOM + 1), None, ("CONTAINER_COUNT", "header.kv_count", 16)),
    ("tensors-at-limit", lambda: costly.many_tensors(TENSOR_ROOM), costly.tensors_size(TENSOR_ROOM), None),
    ("tensors-over-limit", lambda: costly.many_tensors(TENSOR_ROOM + 1), costly.tensors_size(TENSOR_ROOM + 1),
     ("CONTAINER_COUNT", "header.tensor_count", 8)),
    ("strings-at-limit", lambda: costly.many_strings(costly.STRING_LIMIT), None, None),
    ("strings-over-limit", lambda: costly.many_strings(costly.STRING_LIMIT + 1), None,
     ("CONTAINER_COUNT", "metadata.test.strs", "count")),
    # the limit is on all arrays together: test.strs holds 2 before this one
    ("strings-over-limit-together", lambda: extra_strings(costly.STRING_LIMIT - 1), None,
     ("CONTAINER_COUNT", "metadata.~strs", "count")),
    ("json-at-limit", lambda: costly.st_nested_lists(ST_ROOM - 1), None, ("CONTAINER_METADATA", "metadata.x", None)),
    ("json-over-limit", lambda: costly.st_nested_lists(ST_ROOM), None, ("CONTAINER_HEADER", "header", 8)),
    ("json-members-at-limit", lambda: costly.st_many_metadata_keys(MEMBER_ROOM), None, None),
    ("json-members-over-limit", lambda: costly.st_many_metadata_keys(MEMBER_ROOM + 1), None,
     ("CONTAINER_HEADER", "header", 8)),
]


def _count_offset(data: bytes, key: bytes) -> int:
    """Offset of the u64 count of the array whose key is `key` (after its type tag and element tag)."""
    return data.index(u64(len(key)) + key) + 8 + len(key) + 4 + 4


@pytest.fixture(scope="module")
def cpp_engine():
    from charter.engines import cpp

    assert set(SHIPPED.values()) <= set(cpp.contracts()), "charter._native lacks a shipped checker"
    return cpp


@pytest.mark.parametrize("name,build,size,want", BOUNDARIES, ids=[b[0] for b in BOUNDARIES])
def test_each_limit_at_its_boundary_in_both_engines(name, build, size, want, cpp_engine):
    data = build()
    fmt = "safetensors" if name.startswith("json") else "gguf"
    size = len(data) if size is None else size
    try:
        parse_view(data, size, fmt)
        python = None
    except CharterError as exc:
        d = exc.diagnostics[0]
        python = (d.code.value, d.field, d.offset)
    cpp = cpp_engine.run(SHIPPED[fmt], data, size)
    if want is None:  # read whole: the reader is not what rejects it
        assert python is None
        assert cpp.failed is not Stage.CONTAINER, cpp
        return
    code, field, offset = want
    if offset == "count":
        offset = _count_offset(data, field.removeprefix("metadata.").encode())
    if offset is None:
        offset = python[2]
    assert python == (code, field, offset)
    assert cpp.finding[1:] == (code, field, offset), cpp


def test_python_limits_are_parameters():
    """Like max_header_bytes, each limit is a parameter of the reader."""
    data = costly.many_kvs(10)
    with pytest.raises(CharterError) as exc:
        gguf.parse_gguf(data, len(data), max_kv_count=16)
    assert exc.value.diagnostics[0].field == "header.kv_count"
    data = costly.st_nested_lists(10)
    with pytest.raises(CharterError) as exc:
        safetensors.parse_safetensors(data, len(data), max_json_structure=50)
    assert exc.value.diagnostics[0].field == "header"
    data = costly.st_many_metadata_keys(10)
    with pytest.raises(CharterError) as exc:
        safetensors.parse_safetensors(data, len(data), max_json_members=costly.ST_BASE_MEMBERS + 9)
    assert exc.value.diagnostics[0].field == "header"


def _cpp_constant(header: str, name: str) -> int:
    text = (ROOT / "native" / "include" / "charter" / header).read_text("utf-8")
    m = re.search(rf"{name} = 1ull << (\d+);", text)
    assert m, name
    return 1 << int(m.group(1))


def _cpp_members_limit() -> int:
    text = (ROOT / "native" / "include" / "charter" / "safetensors.hpp").read_text("utf-8")
    m = re.search(r"kMaxJsonMembers = \(1ull << (\d+)\) \+ \(1ull << (\d+)\);", text)
    assert m
    return (1 << int(m.group(1))) + (1 << int(m.group(2)))


def test_the_engines_and_the_corpus_state_the_same_limits():
    assert gguf.MAX_KV_COUNT == costly.KV_LIMIT == _cpp_constant("gguf.hpp", "kMaxKvCount")
    assert gguf.MAX_TENSOR_COUNT == costly.TENSOR_LIMIT == _cpp_constant("gguf.hpp", "kMaxTensorCount")
    assert gguf.MAX_STRING_ELEMENTS == costly.STRING_LIMIT == _cpp_constant("gguf.hpp", "kMaxStringElements")
    assert (safetensors.MAX_JSON_STRUCTURE == costly.JSON_STRUCTURE_LIMIT
            == _cpp_constant("safetensors.hpp", "kMaxJsonStructure"))
    assert safetensors.MAX_JSON_MEMBERS == costly.JSON_MEMBER_LIMIT == _cpp_members_limit()


def test_costly_cases_name_their_limits():
    """Each `-at-limit` case of the bench holds exactly as many records as its limit allows."""
    by = {c.name: c for c in costly.cases()}
    h = gguf.parse_gguf(by["gguf/kvs-at-limit"].build(), 2**40)
    assert h.kv_count == costly.KV_LIMIT
    h = gguf.parse_gguf(by["gguf/strings-at-limit"].build(), 2**40)
    assert h.kvs["test.strs"].value.count == costly.STRING_LIMIT
    data = by["safetensors/metadata-keys-at-limit"].build()
    head = data[8 : 8 + int.from_bytes(data[:8], "little")]
    assert head.count(b":") == costly.JSON_MEMBER_LIMIT
    data = by["safetensors/metadata-keys-at-structure-limit"].build()
    head = data[8 : 8 + int.from_bytes(data[:8], "little")]
    assert sum(head.count(c) for c in (b",", b":", b"[")) == costly.JSON_STRUCTURE_LIMIT


@pytest.mark.parametrize("text", ["", pytest.param("é", marks=pytest.mark.slow)])  # 2**20 strings, traced
def test_string_arrays_are_read_in_memory_proportional_to_their_bytes(text):
    """2**20 strings were once read with a list of every element's offset (and, for non-ASCII
    text, a numpy copy of the array): about 50 MiB of bookkeeping for an 8-10 MiB array. Now the
    array's own bytes and a bounded decoding buffer."""
    data = costly.many_strings(costly.STRING_LIMIT, text)
    raw = costly.STRING_LIMIT * (8 + len(text.encode()))
    tracemalloc.start()
    try:
        gguf.parse_gguf(data, len(data))
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < raw + 4 * 2**20, f"peak {peak} bytes for {raw} bytes of elements"


def test_metadata_entries_are_built_on_demand():
    """The view of 2**16 pairs builds no entry until one is asked for (it once built one per pair,
    13 MiB of them, and checking the key set needs none but the one its diagnostic names); the
    entries still read as a mapping."""
    from charter.admission.view import gguf_view

    data = costly.many_kvs(KV_ROOM)
    header = gguf.parse_gguf(data, len(data))
    tracemalloc.start()
    try:
        view = gguf_view(header)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 2**16
    assert len(view.meta) == costly.KV_LIMIT and list(view.meta)[-1] == costly.key(KV_ROOM - 1).decode()
    entry = view.meta["~0"]
    assert (entry.key, entry.type, entry.value) == ("~0", "uint8", 1)
    assert dict(view.meta.items())["test.u32"].value == 42 and "x" not in view.meta


@pytest.mark.parametrize("case", ["gguf/kvs-at-limit", "gguf/tensors-at-limit", "gguf/string-arrays-at-limit"])
def test_the_fast_path_reads_what_the_checked_path_reads(case, monkeypatch):
    """Note [Reader limits]: every well-formed record is read by the fast path; the checked path
    alone reads the same header."""
    c = {x.name: x for x in costly.cases()}[case]
    data = c.build()
    size = c.size or len(data)
    fast = gguf.parse_gguf(data, size)
    monkeypatch.setattr(gguf, "FAST_PATHS", False)
    assert gguf.parse_gguf(data, size) == fast


def _outcome(data: bytes, size: int):
    try:
        return gguf.parse_gguf(data, size)
    except CharterError as exc:
        return exc.diagnostics


def test_fast_and_checked_paths_agree_on_the_corpus_and_every_byte_edit(monkeypatch):
    """The fast path never accepts what the checked path rejects, nor reads a record otherwise:
    the same header or the same diagnostic (message and offset included) for every GGUF case of
    the hostile corpus and every byte of the base file set to 0x00, 0x01, 0x80 and 0xFF."""
    from tests.hardening import corpus

    base = corpus.base_gguf()
    inputs = [(c.data, c.size or len(c.data)) for c in corpus.gguf_cases() if len(c.data) < 2**20]
    for i in range(len(base)):
        for b in (0x00, 0x01, 0x80, 0xFF):
            inputs.append((base[:i] + bytes([b]) + base[i + 1 :], len(base)))
    fast = [_outcome(d, n) for d, n in inputs]
    monkeypatch.setattr(gguf, "FAST_PATHS", False)
    checked = [_outcome(d, n) for d, n in inputs]
    assert len(inputs) > 2000
    assert [i for i, (a, b) in enumerate(zip(fast, checked)) if a != b] == []


@pytest.mark.parametrize("edit,duplicate", [
    (lambda t: t.replace('"b":', '"a":'), True),  # a tensor
    (lambda t: t.replace('"format":"pt"', '"format":"pt","format":"pt"'), True),  # a metadata key
    (lambda t: t.replace('"dtype":"F32"', '"dtype":"F32","dtype":"F32"', 1), True),  # an entry's field
    (lambda t: t.replace('"format":"pt"', '"format":"p:t","f:x":"y"'), False),  # colons in metadata
    (lambda t: t.replace('"b":', '"b:1":'), False),  # a colon in a tensor name
    (lambda t: t.replace('"format":"pt"', '"format":"p:t","format":"p:t"'), True),  # both at once
])
def test_the_plain_decoder_never_hides_a_duplicate(edit, duplicate):
    """A header without a backslash is decoded without the duplicate hook first (a third faster)
    and kept only when every `:` is a member or inside a string (charter.formats.safetensors
    `_no_key_dropped`): a duplicate is still found, and colons in strings are not taken for one.
    Either way the result is the positional walker's."""
    import json as _json

    from tests.hardening import corpus

    data = corpus.st_file(edit(_json.dumps(corpus.st_header(), separators=(",", ":"))))
    assert b"\\" not in data
    try:
        got = safetensors.parse_safetensors(data, len(data))
    except CharterError as exc:
        got = exc.diagnostics
        assert duplicate and got[0].code.value == "CONTAINER_DUPLICATE_KEY"
    else:
        assert not duplicate
    assert got == _walker(data)


def _walker(data: bytes):
    try:
        return safetensors._parse(data, len(data), False)
    except CharterError as exc:
        return exc.diagnostics


_PEAK = """
import json, sys
from charter.admission.view import parse_view
from charter.diagnostics import CharterError
from charter.engines import cpp
path, engine = sys.argv[1:]
if engine == "cpp":
    finding = cpp.run_file(path, "tiny-llama-safetensors").finding[1]
else:
    from charter.formats.safetensors import read_safetensors
    try:
        read_safetensors(path)
        finding = None
    except CharterError as exc:
        finding = exc.diagnostics[0].code.value
with open("/proc/self/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(json.dumps([finding, hwm // 1024]))
"""


@pytest.mark.slow  # two fresh interpreters reading 11 MiB of JSON: about 2 s
def test_the_most_metadata_keys_fit_the_memory_target_in_both_engines(tmp_path):
    """Issue 12 item 3: at most 256 MiB for any header of at most 64 MiB. The densest case for
    memory, metadata keys (1,048,556 once took the C++ engine 276 MiB: docs/security.md), now as
    many as Note [JSON member limit] in charter/formats/safetensors.py allows. The file is
    read whole: the reader builds the view of every key, and the checks after it (here, the shipped
    contract's identity) keep nothing per key."""
    import json
    import subprocess
    import sys

    path = tmp_path / "keys.safetensors"
    path.write_bytes(costly.st_many_metadata_keys(MEMBER_ROOM))
    for engine in ("cpp", "python"):
        out = subprocess.run([sys.executable, "-c", _PEAK, str(path), engine], capture_output=True, text=True,
                             check=True, cwd=ROOT).stdout
        finding, peak_mib = json.loads(out)
        assert finding is None if engine == "python" else not finding.startswith("CONTAINER_")  # read whole
        assert peak_mib <= 256, f"{engine}: {peak_mib} MiB"


def _walk_reference(buf: bytes, start: int, count: int, end: int):
    """What `_walk_strings` must return, one element at a time with every bound spelled out."""
    p, splits = start, []
    for _ in range(count):
        if p + 8 > end:
            return None
        n = int.from_bytes(buf[p : p + 8], "little")
        if any(b >= 0x80 for b in buf[p : p + 8]):
            splits.append(p)
        p += 8 + n
    return (p, splits) if p <= end else None


@pytest.mark.parametrize("lengths,tail,cut", [
    ([], b"", 0),
    ([0, 3, 0], b"", 0),  # ends exactly at `end`
    ([5, 127, 128, 200, 0x8000, 1], b"", 0),  # prefixes with a byte >= 0x80: their offsets listed
    ([4, 4], b"xy", 0),  # bytes left after the last
    ([4, 4], b"", 1),  # the last element one byte short
    ([4, 4], b"", 4),  # the last length prefix cut inside
    ([4, 2**63], b"", 0),  # a length far past the end
    ([2**64 - 1, 0], b"", 0),  # the largest length: the next prefix would start past any buffer
    ([0x80, 0], b"", 200),  # a high-byte prefix, then an overrun
])
def test_the_string_walk_matches_its_reference(lengths, tail, cut):
    """`_walk_strings`' two walks (lengths ORed, then the high-byte prefixes) against the plain
    element-by-element walk, on lengths with and without high bytes, exact and short ends."""
    buf = b"head" + b"".join(n.to_bytes(8, "little") + b"a" * min(n, 0x9000) for n in lengths) + tail
    buf = buf[: len(buf) - cut]
    want = _walk_reference(buf, 4, len(lengths), len(buf))
    assert gguf._walk_strings(buf, 4, len(lengths), len(buf)) == want
    assert gguf._walk_strings(buf + b"\0" * 64, 4, len(lengths), len(buf)) == want  # `end` short of the buffer
