"""The value policy in Context.payload (charter.admission.runtime), each diagnostic pinned whole:
the rule that checks a tensor, the block, field and byte of the first bad value, whole blocks per
chunk whatever PAYLOAD_CHUNK is, the C++ scanner and the payload reader."""

from __future__ import annotations

import hashlib
import struct

import pytest

from charter.admission import runtime
from tests.mutmut.views import ctx, diag, rejection, tensor, view

RULES = (("norms", ("n*",), False, "V:3:3"), ("finite", ("q",), True, "V:4:4"), ("default", ("*",), True, "V:2:2"))
PAT = {"at": None, "padding_at": None, "tensors": (), "padding": "any"}


@pytest.fixture
def artifact(tmp_path):
    """header [0, 64); q: Q4_1 [64, 124) three blocks; f: F32 [124, 132); n: F32 [132, 136)."""

    def make(patches=()):
        data = bytearray(b"H" * 64 + bytes(60) + struct.pack("<2f", 1.0, -2.0) + struct.pack("<f", 3.0))
        for offset, raw in patches:
            data[offset:offset + len(raw)] = raw
        path = tmp_path / "v.bin"
        path.write_bytes(bytes(data))
        ts = [tensor("q", (96,), "Q4_1", 64, 124), tensor("f", (2,), "F32", 124, 132), tensor("n", (1,), "F32", 132, 136)]
        return ctx(view(tensors=ts, header_end=64, data_offset=64, file_size=136), path=str(path)), bytes(data)

    return make


def _payload(c, values=RULES, file_sha256=None):
    return c.payload(file_sha256=file_sha256, values=values, **PAT)


def test_finite_values_pass(artifact):
    c, data = artifact()
    assert _payload(c) is None
    assert _payload(c, file_sha256=hashlib.sha256(data).hexdigest()) is None


@pytest.mark.parametrize("chunk", [1, 7, 20, 21, 1 << 20])
@pytest.mark.parametrize("native", [False, True])
def test_the_first_bad_value_whatever_the_chunks(artifact, monkeypatch, chunk, native):
    monkeypatch.setattr(runtime, "PAYLOAD_CHUNK", chunk)
    c, data = artifact([(64 + 40 + 2, struct.pack("<H", 0x7C01)), (64 + 40, struct.pack("<H", 0xFC00))])
    c._native_values = native
    assert rejection(_payload, c, RULES, hashlib.sha256(b"").hexdigest()) == diag(
        "PAYLOAD_VALUE", "values.q.blocks[2].d", "q: block 2 of Q4_1, field d, is -Inf (f16 0xfc00) at byte 104",
        "finite", "-Inf (f16 0xfc00)", "V:4:4", 104)
    c, _ = artifact([(64 + 22, struct.pack("<H", 0x7C01))])
    c._native_values = native
    assert rejection(_payload, c)["field"] == "values.q.blocks[1].m"
    assert rejection(_payload, c)["actual"] == "sNaN (f16 0x7c01)"


def test_float_elements_and_exceptions(artifact):
    c, _ = artifact([(128, struct.pack("<I", 0x7FC00000)), (132, struct.pack("<I", 0xFF800000))])
    assert rejection(_payload, c) == diag(
        "PAYLOAD_VALUE", "values.f[1]", "f: element 1 (F32) is NaN (f32 0x7fc00000) at byte 128", "finite",
        "NaN (f32 0x7fc00000)", "V:2:2", 128)
    c, _ = artifact([(132, struct.pack("<I", 0xFF800000))])
    assert _payload(c) is None  # n is excepted (the first matching rule decides)
    assert rejection(_payload, c, RULES[1:])["field"] == "values.n[0]"
    assert _payload(c, (("default", ("*",), False, "V:2:2"),)) is None
    assert _payload(c, ()) is None


def test_a_short_file_ends_inside_a_checked_tensor(tmp_path):
    path = tmp_path / "short.bin"
    path.write_bytes(b"H" * 64 + bytes(30))
    c = ctx(view(tensors=[tensor("q", (96,), "Q4_1", 64, 124)], header_end=64, data_offset=64, file_size=124),
            path=str(path))
    assert rejection(_payload, c) == diag("PAYLOAD_DIGEST", "file", "file ended at 94, before 124", "124", "94", None, 94)


def test_the_payload_reader_is_streamed(artifact):
    c, data = artifact()
    patched = bytearray(data)
    patched[64:66] = struct.pack("<H", 0x7E00)
    c._payload_reader = lambda offset, length: bytes(patched[offset:offset + length])
    assert rejection(_payload, c)["field"] == "values.q.blocks[0].d"


@pytest.mark.parametrize("native", [False, True])
def test_values_resumed_inside_a_tensor_count_blocks_from_its_start(artifact, native):
    """A verified prefix inside q (Note [Verified prefix]): blocks before it are not scanned again,
    and a bad value after it is named by its block in q and its byte in the file."""
    c, data = artifact([(64, struct.pack("<H", 0x7E00)), (64 + 40, struct.pack("<H", 0xFC00))])
    c._native_values = native
    c._verified_prefix = runtime.VerifiedPrefix(84, hashlib.sha256(data[:84]))
    assert rejection(_payload, c) == diag(
        "PAYLOAD_VALUE", "values.q.blocks[2].d", "q: block 2 of Q4_1, field d, is -Inf (f16 0xfc00) at byte 104",
        "finite", "-Inf (f16 0xfc00)", "V:4:4", 104)


def test_a_stream_resumed_inside_a_tensor_reads_a_short_chunk_first(artifact, monkeypatch):
    """From a verified prefix, where a mutant changed a block, the first read is RESUMED_CHUNK's
    whole blocks, then PAYLOAD_CHUNK's; the verdict is the one a single long read gives."""
    c, data = artifact([(64 + 40, struct.pack("<H", 0xFC00))])
    reads = []

    def read(offset, length):
        reads.append((offset, length))
        return data[offset:offset + length]

    c._payload_reader, c._verified_prefix = read, runtime.VerifiedPrefix(84, hashlib.sha256(data[:84]))
    monkeypatch.setattr(runtime, "RESUMED_CHUNK", 25)
    expected = diag("PAYLOAD_VALUE", "values.q.blocks[2].d", "q: block 2 of Q4_1, field d, is -Inf (f16 0xfc00) at "
                    "byte 104", "finite", "-Inf (f16 0xfc00)", "V:4:4", 104)
    assert rejection(_payload, c) == expected
    assert reads == [(84, 20), (104, 20)]  # one Q4_1 block of 20 bytes, then the rest of q
    reads.clear()
    c._verified_prefix = None
    assert rejection(_payload, c) == expected and (64, 60) in reads  # from the header on: q in one read


def test_a_bad_field_is_named_at_its_own_byte(artifact):
    c, _ = artifact([(64 + 22, struct.pack("<H", 0x7C01))])  # block 1 starts at 84; its m at +2
    assert rejection(_payload, c)["offset"] == 86


def test_the_value_rules_reach_the_scanner_the_engine_asks_for(artifact, monkeypatch):
    """Context(native_values=...) decides which scanner runs (tensor_rules' `native`), and a policy
    that checks nothing asks for no rules at all."""
    from charter.admission import values

    seen = []
    real = values.tensor_rules
    monkeypatch.setattr(values, "tensor_rules", lambda *a: seen.append(a[-1]) or real(*a))
    monkeypatch.setattr(runtime, "_RULES", {})  # no selection kept from another test
    for native in (False, True):
        c, _ = artifact()
        c._native_values = native
        assert _payload(c) is None
    assert seen == [False, True]
    c, _ = artifact()
    assert _payload(c, (("norms", ("n*",), False, "V:3:3"),)) is None and seen == [False, True]


def test_no_digest_pinned_hashes_nothing(artifact, monkeypatch):
    calls = []
    monkeypatch.setattr(runtime.hashlib, "sha256", lambda *a: calls.append(a) or hashlib.new("sha256", *a))
    c, _ = artifact()
    assert _payload(c) is None and calls == []


def test_admit_view_hands_its_readers_and_scanner_to_the_context(artifact):
    import types

    from charter.admission.runtime import Context, admit_view

    seen = []
    checker = types.SimpleNamespace(CONTRACT_ID="c", SPEC="s", FORMAT="gguf", STATUS="structural",
                                    STAGES=(("payload", lambda ctx: seen.append((ctx._payload_reader,
                                                                                  ctx._native_values))),))
    c, _ = artifact()
    read = lambda pos, n: b""  # noqa: E731
    admit_view(c.view, c.path, checker, verify_payload=True, payload_reader=read, native_values=True)
    admit_view(c.view, c.path, checker, verify_payload=True)
    assert seen == [(read, True), (None, False)]
    assert Context(c.view, c.path)._native_values is False


def test_admit_view_takes_the_callers_word_for_the_header_stages_only(artifact):
    """header_admitted (Note [Admitted header]): every header stage recorded as passed without
    running; the payload stage still runs, and without the word every stage runs."""
    import types

    from charter.admission.runtime import admit_view

    ran = []
    stages = tuple((s, lambda ctx, s=s: ran.append(s)) for s in ("container", "metadata", "payload"))
    checker = types.SimpleNamespace(CONTRACT_ID="c", SPEC="s", FORMAT="gguf", STATUS="structural", STAGES=stages)
    c, _ = artifact()
    report = admit_view(c.view, c.path, checker, verify_payload=True, header_admitted=True)
    assert ran == ["payload"] and report.admitted
    ran_or_recorded = [(s.stage, s.result) for s in report.stages if s.result != "not-run"]
    assert ran_or_recorded == [("container", "passed"), ("metadata", "passed"), ("payload", "passed")]
    admit_view(c.view, c.path, checker, verify_payload=True)
    assert ran == ["payload", "container", "metadata", "payload"]


def test_a_kept_selection_asks_the_scanner_of_its_time(artifact, monkeypatch):
    """Context._value_rules keeps its selections (a battery's value mutants share one header), keyed
    by the scanner itself: a scanner put in place later is the one asked."""
    from charter import _native

    monkeypatch.setattr(runtime, "_RULES", {})
    c, _ = artifact([(64 + 40, struct.pack("<H", 0xFC00))])
    c._native_values = True
    assert rejection(_payload, c)["field"] == "values.q.blocks[2].d"
    asked = []
    real = _native.first_bad_value
    monkeypatch.setattr(_native, "first_bad_value", lambda *a: asked.append(a[1]) or real(*a))
    c, _ = artifact([(64 + 40, struct.pack("<H", 0xFC00))])
    c._native_values = True
    assert rejection(_payload, c)["field"] == "values.q.blocks[2].d" and asked


def test_the_payload_reader_reads_on_from_where_it_was():
    data = bytes(range(10))
    f = runtime._ReaderFile(lambda pos, n: data[pos:pos + n])
    assert f.read(3) == data[:3] and f.read(3) == data[3:6] and f.read(3) == data[6:9]
    f.seek(8)
    assert f.read(5) == data[8:]


def test_a_safetensors_element_is_its_dtype_in_whole_bytes():
    width = runtime.block_bytes_of("safetensors")
    assert [width(d) for d in ("F32", "BF16", "F64", "U8")] == [4, 2, 8, 1]
    assert type(width("F32")) is int


@pytest.mark.parametrize("native", (False, True))
def test_the_first_element_out_whatever_the_chunks(tmp_path, monkeypatch, native):
    """Context.payload over a two-tensor view: bounds with one open side, the first finding in
    file order, the side's own location, whole elements per chunk."""
    from charter import _native

    monkeypatch.setattr(runtime, "PAYLOAD_CHUNK", 7)
    scanned = []
    real = _native.first_out_of_bounds
    monkeypatch.setattr(_native, "first_out_of_bounds", lambda *a: scanned.append(a[1:]) or real(*a))
    data = bytearray(b"H" * 64 + struct.pack("<4h", 3, 4, 5, 6) + bytes([0, 1, 1, 0]))
    path = tmp_path / "b.bin"
    ts = [tensor("a", (4,), "I16", 64, 72), tensor("m", (4,), "BOOL", 72, 76)]
    bounds = (("a", ("a",), None, 5, None, "V:3:3"), ("m", ("m",), None, 1, None, "V:4:4"))

    def payload():
        path.write_bytes(bytes(data))
        c = ctx(view(tensors=ts, fmt="safetensors", header_end=64, data_offset=64), path=str(path))
        c._native_values = native
        return c.payload(file_sha256=None, tensors=(), padding="any", at=None, padding_at=None, bounds=bounds)

    assert rejection(payload) == diag("PAYLOAD_BOUND", "values.a[3]",
                                      "a: element 3 (I16) is 6 at byte 70, above the bound max 5", "<= 5", "6",
                                      "V:3:3", 70)
    data[70:72] = struct.pack("<h", -32768)  # min is open: the I16's own least value is in bounds
    data[74] = 7
    assert rejection(payload) == diag("PAYLOAD_BOUND", "values.m[2]",
                                      "m: element 2 (BOOL) is 7 at byte 74, above the bound max 1", "<= 1", "7",
                                      "V:4:4", 74)
    data[74] = 1
    assert payload() is None
    a, m = ("i16", -32768, 5), ("u8", 0, 1)  # a in chunks of 6 bytes, then 2; m in one
    assert scanned == [a, a] + [a, a, m] * 2 if native else not scanned
    bounds = ()
    data[70:72] = struct.pack("<h", 9)
    assert payload() is None  # no bound, nothing scanned
