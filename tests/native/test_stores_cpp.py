"""The stores stage in the C++ engine (Note [Store regions] in native/include/charter/stores.hpp):
over the Qwen4Exp sparse fixture, the C++ checker reads the store manifests only from the regions
the caller passes or its reader reads when asked, asks for exactly the reads of the Python stage,
and gives the Python stage's first diagnostic -- stage, code, field and byte offset -- on the store
mutants of the battery (every artifact mutant, header and store mutants:
tests/batteries/qwen4exp.battery.yaml), on short, missing, shifted and overlapping regions, and on
random edits of the manifest bytes; an AddressSanitizer build (slow: make test-slow) proves it
never reads outside the regions it is given."""

from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.toolchain import compiler
from charter.admission.runtime import admit, admit_view
from charter.admission.view import parse_view
from charter.diagnostics import CharterError, Stage
from charter.engines import Options, Verdict
from charter.engines import cpp as engine
from charter.mutation.run import all_mutants, overlay_reader, run
from charter.formats.stores import expertmajor as em
from charter.formats.stores import ple

from tests.conftest import need_checker

from .conftest import ROOT

CID = "qwen4exp-text"
SPEC = "specs/artifacts/qwen4exp-text.yaml"


@dataclass
class Qwen:
    battery: object
    path: Path
    header: bytes
    view: object
    facts: list
    extents: dict
    reads: list  # (offset, length) of each store read, as the C++ checker asks for them


@pytest.fixture(scope="module")
def qwen(native, tmp_path_factory):
    from charter.conforming.stores import build_sparse, overrides_for
    from charter.mutation.run import load_battery
    from charter.contract.contractset import load_set

    need_checker(native, CID)
    cs = load_set([ROOT / SPEC], [ROOT / "specs"])
    plan = cs.artifacts[CID]
    path = tmp_path_factory.mktemp("qwen4exp-cpp") / f"{CID}.gguf"
    build_sparse(plan, path, overrides=overrides_for(CID))
    b = load_battery(cs, CID, path)
    facts = list(engine.info(CID).stores)
    extents = native.tensor_extents("gguf", b.raw_header, b.view.file_size, [s["tensor"] for s in facts])
    reads = []

    def recording(offset, length):
        reads.append((offset, length))
        return overlay_reader(b, b.view, {})(offset, length)

    assert engine.run(CID, b.raw_header, b.view.file_size, read_at=recording).admitted
    yield Qwen(b, path, b.raw_header, b.view, facts, extents, reads)
    path.unlink()


def _python(q: Qwen, buf, size: int, reader_for) -> Verdict:
    """The Python engine, its store bytes read by reader_for(view)."""
    return _python_view(q, buf, size, reader_for)[0]


def _python_view(q: Qwen, buf, size: int, reader_for):
    """(verdict, the view the Python reader built, or None if it rejected)."""
    try:
        view = q.view if buf is q.header else parse_view(buf, size, "gguf")
    except CharterError as exc:
        return Verdict.rejected(Stage.CONTAINER, exc.diagnostics[0]), None
    report = admit_view(view, str(q.path), q.battery.checker, require_status=q.battery.require_status,
                        reader=reader_for(view))
    return Verdict.of_report(report), view


def _cpp(q: Qwen, buf, size: int, read_at=None, regions=None) -> Verdict:
    """The C++ engine (INTERNAL raises), its store bytes from `regions` or asked of `read_at`."""
    return engine.run(CID, buf, size, Options(require_status=q.battery.require_status), read_at=read_at,
                      regions=regions)


def _same(p: Verdict, q: Verdict) -> bool:
    return (p.admitted, p.finding) == (q.admitted, q.finding)


def _region_reader(regions):
    """Context.read over regions as the C++ checker serves them: the longest run of bytes that one
    region holds from `offset` (Note [Store regions])."""

    def read(offset: int, length: int) -> bytes:
        best = None
        for start, data in regions:
            if start <= offset <= start + len(data):
                run_ = bytes(data[offset - start: offset - start + length])
                if best is None or len(run_) > len(best):
                    best = run_
        return best or b""

    return read


# --- the conforming artifact ----------------------------------------------------------------------


def test_sparse_artifact_is_admitted_by_both_engines(qwen):
    cpp = engine.admit(qwen.path, CID, Options(require_status="structural"))
    py = admit(str(qwen.path), qwen.battery.checker, require_status="structural")
    assert cpp.admitted and py.admitted, (cpp.render(), py.render())
    assert [(s.stage, s.result) for s in cpp.stages] == [(s.stage, s.result) for s in py.stages]
    assert ("stores", "passed") in [(s.stage, s.result) for s in cpp.stages]


def test_the_cpp_checker_asks_for_the_reads_of_the_python_stage(qwen):
    """The C++ checker asks its reader for exactly the (offset, length) reads Context.read serves
    for the Python stage, in its order (Note [Store regions]): one statement of them per engine."""
    seen = []

    def recording(offset, length):
        seen.append((offset, length))
        return overlay_reader(qwen.battery, qwen.view, {})(offset, length)

    admit_view(qwen.view, str(qwen.path), qwen.battery.checker, reader=recording)
    reads = qwen.reads
    assert reads == seen
    sizes = {n for _, n in reads}
    assert {em.MANIFEST.size, ple.MANIFEST.size, ple.PAGE.size, 64 * 3, 64 * 24576} <= sizes


def test_without_regions_the_stage_reports_the_missing_bytes(qwen):
    """No regions: the file reads as ending where the first manifest starts (Context.read's short read)."""
    base = qwen.extents["expert_major.store"][0]
    v = _cpp(qwen, qwen.header, qwen.view.file_size, regions=[])
    assert v.finding == ("stores", "STORE_GEOMETRY", "file", base)
    p = _python(qwen, qwen.header, qwen.view.file_size, lambda view: lambda o, n: b"")
    assert _same(p, v)


def test_admit_cpp_over_bytes_needs_a_reader(qwen):
    with pytest.raises(TypeError, match="read_at"):
        engine.admit(qwen.header, CID, file_size=qwen.view.file_size)
    read_at = overlay_reader(qwen.battery, qwen.view, {})
    report = engine.admit(qwen.header, CID, file_size=qwen.view.file_size, read_at=read_at)
    assert report.admitted, report.render()


def test_layouts_match_the_python_formats(native):
    """The C++ runtime's record layouts are charter.formats.stores' layouts, field for field."""
    layouts = native.store_layouts()
    for py in (em.MANIFEST, em.COMPONENT, em.RECORD, ple.MANIFEST, ple.PAGE):
        size, fields = layouts[py.name]
        assert size == py.size
        assert fields == [(name, offset, struct.calcsize("<" + code), code.endswith("s"))
                          for name, code, offset in py.fields]
    assert native.STORE_MAX_TABLE_BYTES == __import__("charter.admission.stores").admission.stores.MAX_TABLE_BYTES
    assert native.STORE_CHUNK == __import__("charter.admission.stores").admission.stores.CHUNK


def test_compiled_store_facts_are_the_plan(contract_set, qwen):
    plan = contract_set.artifacts[CID]
    assert [(s["name"], s["kind"], s["tensor"]) for s in qwen.facts] == [(s.name, s.kind, s.tensor)
                                                                       for s in plan.stores]
    for s, p in zip(qwen.facts, plan.stores):
        assert s["fields"] == [(f, v) for f, v, _ in p.fields]
        assert s["components"] == [(n, a, b) for n, a, b, _ in p.components]
        assert s["head_rows"] == [v for v, _ in p.head_rows]


# --- the battery ----------------------------------------------------------------------------------


def test_the_battery_holds_the_store_mutants(qwen):
    """The differential verdict on every artifact mutant of this battery, header and store mutants
    alike (both engines give the same stage, code, field and offset, store bytes read through the
    overlay reader) is tests/batteries/qwen4exp.battery.yaml (`engines: both`, one item per mutant,
    each also required to be killed where predicted; make test-slow). Here: that battery is the
    one this file's fixture builds, and it holds the store mutants it must."""
    from charter.mutation.pytest_plugin import _battery_doc
    from charter.contract.yamlload import load_file

    doc = _battery_doc(load_file(str(ROOT / "tests" / "batteries" / "qwen4exp.battery.yaml")))
    assert (ROOT / "tests" / "batteries" / doc["contract"]).resolve() == (ROOT / SPEC).resolve()
    assert doc["engines"] == "both" and "only" not in doc
    mutants = [m for m in all_mutants(qwen.battery, "artifact") if m.make is not None]
    stores = [m for m in mutants if m.target.startswith("stores.")]
    assert len(mutants) > 600 and len(stores) >= 80
    assert all(len(made) > 2 and made[2] for made in (m.make() for m in stores))  # their bytes are patches
    assert {"STORE_MANIFEST", "STORE_GEOMETRY", "STORE_DIGEST"} <= {m.expect.code for m in stores}


def test_mutate_engine_both_runs_store_mutants(qwen):
    """`charter mutate --engine both` (charter.mutation.run.run): store mutants run on both engines
    and are killed -- one of each store and expected code here; every one of them in the battery."""
    b = qwen.battery
    b.engines = "both"
    try:
        firsts = {}
        for m in all_mutants(b, "artifact"):
            if m.target.startswith("stores."):
                firsts.setdefault((m.target.split(".")[1], m.expect.code), m)
        outcomes = run(b, list(firsts.values()))
    finally:
        b.engines = "python"
    assert len(outcomes) >= 6 and {s for s, _ in firsts} == {"expert_major", "ple"}
    bad = [(o.mutant.id, o.verdict.value, o.detail) for o in outcomes if o.verdict.value != "killed"]
    assert not bad, bad


# --- regions short, missing, shifted or overlapping -----------------------------------------------


def _true_regions(q: Qwen):
    read = overlay_reader(q.battery, q.view, {})
    return [(offset, read(offset, length)) for offset, length in q.reads]


def _agree_on_regions(q: Qwen, regions) -> Verdict:
    p = _python(q, q.header, q.view.file_size, lambda view: _region_reader(regions))
    c = _cpp(q, q.header, q.view.file_size, regions=regions)
    assert _same(p, c), (str(p), str(c))
    return c


def test_each_region_cut_short_or_missing(qwen):
    """A region that ends early is a file that ended there: STORE_GEOMETRY at `file`, at the offset
    of the read that needed the missing bytes, in both engines."""
    regions = _true_regions(qwen)
    assert _agree_on_regions(qwen, regions).admitted
    seen = set()
    for i, (offset, data) in enumerate(regions):
        for keep in (0, 1, len(data) // 2, len(data) - 1):
            cut = regions[:i] + [(offset, data[:keep])] + regions[i + 1:]
            v = _agree_on_regions(qwen, cut)
            assert (v.finding.code, v.finding.field, v.finding.offset) == ("STORE_GEOMETRY", "file", offset)
            seen.add(offset)
        v = _agree_on_regions(qwen, regions[:i] + regions[i + 1:])
        assert (v.finding.code, v.finding.field) == ("STORE_GEOMETRY", "file")
    assert len(seen) == len(regions) >= 10


def test_shifted_split_and_overlapping_regions(qwen):
    regions = _true_regions(qwen)
    # one region served by two halves: a read is served by one region, never stitched
    offset, data = regions[2]
    half = len(data) // 2
    v = _agree_on_regions(qwen, regions[:2] + [(offset, data[:half]), (offset + half, data[half:])] + regions[3:])
    assert (v.finding.field, v.finding.offset) == ("file", offset)
    # a region that starts one byte early (its bytes shifted): served from inside it
    shifted = [(o - 1, b"\0" + d) for o, d in regions]
    assert _agree_on_regions(qwen, shifted).admitted
    # garbage overlapping the true bytes, before and after them: the longest run wins
    noisy = [(o, bytes(len(d) // 2 or 1)) for o, d in regions] + regions
    assert _agree_on_regions(qwen, noisy).admitted
    # two regions holding the whole read: the first one listed serves it
    offset, data = regions[0]
    v = _agree_on_regions(qwen, [(offset, b"\xff" * (len(data) + 1))] + regions)
    assert v.finding.code == "STORE_MANIFEST" and v.finding.field == "stores.expert_major.manifest.magic"
    # regions far from the stores, empty and at offset 0
    assert _agree_on_regions(qwen, [(0, b""), (2**63, b"x"), (2**64 - 1, b"")] + regions).admitted


# --- random edits of the manifest bytes ------------------------------------------------------------

_FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def _edit_agrees(q: Qwen, patches: dict[int, bytes]) -> Verdict:
    b = q.battery
    p = _python(q, q.header, q.view.file_size, lambda view: overlay_reader(b, view, patches))
    c = _cpp(q, q.header, q.view.file_size, read_at=overlay_reader(b, q.view, patches))
    assert _same(p, c), (patches, str(p), str(c))
    return c


@_FUZZ
@given(picks=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 255)),
                      min_size=1, max_size=4))
def test_fuzz_manifest_byte_edits(qwen, picks):
    """Random bytes of the store regions changed (the digests then fail, unless a field check fails first)."""
    reads = qwen.reads
    patches = {}
    for which, pos, value in picks:
        offset, length = reads[which % len(reads)]
        patches[offset + pos % min(length, 4096)] = bytes([value])
    _edit_agrees(qwen, patches)


_LAYOUTS = [("expert_major.store", 0, em.MANIFEST), ("expert_major.store", em.COMPONENT_TABLE, em.COMPONENT),
            ("ple.store", 0, ple.MANIFEST)]


@_FUZZ
@given(which=st.integers(0, 2), field=st.integers(0, 40),
       value=st.sampled_from([0, 1, 2, 4, 64, 4096, 2**31, 2**32 - 1, 2**32, 2**62, 2**63, 2**64 - 1]))
def test_fuzz_manifest_field_edits(qwen, which, field, value):
    """One manifest or component field set to a boundary value."""
    tensor, at, layout = _LAYOUTS[which]
    _, code, offset = layout.fields[field % len(layout.fields)]
    width = struct.calcsize("<" + code)
    raw = (value % 256**width).to_bytes(width, "little")
    _edit_agrees(qwen, {qwen.extents[tensor][0] + at + offset: raw})


@_FUZZ
@given(index=st.integers(0, 24575), field=st.sampled_from(["layer", "expert", "offset"]), delta=st.integers(-3, 3))
def test_fuzz_record_table_edits(qwen, index, field, delta):
    """Any one of the 24,576 record entries: the loop finds it, at its own offset."""
    b = qwen.battery
    base = qwen.extents["expert_major.store"][0]
    head = em.MANIFEST.parse(overlay_reader(b, qwen.view, {})(base, em.MANIFEST.size))
    at = base + head["table_offset"] + index * em.RECORD.size + em.RECORD.offset_of(field)
    code = em.RECORD.code_of(field)
    width = struct.calcsize("<" + code)
    old = int.from_bytes(overlay_reader(b, qwen.view, {})(at, width), "little")
    v = _edit_agrees(qwen, {at: ((old + delta) % 256**width).to_bytes(width, "little")})
    if delta:
        assert (v.finding.field, v.finding.offset) == (f"stores.expert_major.records[{index}].{field}", at)


# --- never reading outside the regions: an AddressSanitizer build ---------------------------------

DRIVER = r"""
// Reads, from stdin: file size, header length, header; then cases of regions (count, then offset,
// length, bytes each), every region in its own exactly sized heap block so that AddressSanitizer
// catches any read past it. Prints one verdict line per case.
#include <cstdio>
#include <cstdint>
#include <memory>
#include <vector>
#include "HEADER"

static bool u64(std::uint64_t* v) { return std::fread(v, 8, 1, stdin) == 1; }

int main() {
  std::uint64_t file_size, n;
  if (!u64(&file_size) || !u64(&n)) return 2;
  std::unique_ptr<unsigned char[]> header(new unsigned char[n]);
  if (n && std::fread(header.get(), 1, n, stdin) != n) return 2;
  std::uint64_t count;
  while (u64(&count)) {
    std::vector<std::unique_ptr<unsigned char[]>> blocks;
    std::vector<charter::rt::Region> regions;
    for (std::uint64_t i = 0; i < count; ++i) {
      std::uint64_t offset, size;
      if (!u64(&offset) || !u64(&size)) return 2;
      blocks.emplace_back(size ? new unsigned char[size] : nullptr);
      if (size && std::fread(blocks.back().get(), 1, size, stdin) != size) return 2;
      regions.push_back(charter::rt::Region{offset, blocks.back().get(), size});
    }
    charter::rt::Options options;
    options.require_status = "structural";
    options.regions = charter::rt::Span<charter::rt::Region>{regions.data(), regions.size()};
    const charter::rt::Report r = charter::checkers::NAMESPACE::admit(header.get(), n, file_size, options);
    if (r.admitted) {
      std::printf("admitted\n");
    } else {
      const auto code = charter::rt::code_name(r.diagnostic.code);
      std::printf("%.*s %s %llu\n", static_cast<int>(code.size()), code.data(), r.diagnostic.field.c_str(),
                  static_cast<unsigned long long>(r.diagnostic.offset));
    }
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def asan_driver(tmp_path_factory):
    from charter.codegen.common.names import identifier

    tmp = tmp_path_factory.mktemp("asan")
    src = tmp / "driver.cpp"
    header = ROOT / "generated" / "cpp" / f"{CID}.hpp"
    src.write_text(DRIVER.replace("HEADER", str(header)).replace("NAMESPACE", identifier(CID)))
    exe = tmp / "driver"
    done = subprocess.run([compiler(), "-std=c++17", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                           "-Wall", "-Wextra", "-Werror", "-fno-exceptions", "-fno-rtti", "-I",
                           str(ROOT / "native" / "include"), str(src), "-o", str(exe)],
                          check=False, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and "asan" in done.stderr.lower():
        pytest.skip(f"no AddressSanitizer runtime: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return exe


@pytest.mark.slow  # a sanitizer build of the checker: about a minute of compiling
def test_asan_never_reads_outside_the_regions(qwen, asan_driver):
    """The checker built standalone (no exceptions, no Python) with AddressSanitizer and UBSan, over
    exact-size regions: whole, cut at every read's edge, missing, shifted, garbage; its verdicts are
    the Python engine's and no access leaves a region."""
    regions = _true_regions(qwen)
    cases = [regions, []]
    for i, (offset, data) in enumerate(regions):
        cases.append(regions[:i] + [(offset, data[:-1])] + regions[i + 1:])
        cases.append(regions[:i] + [(offset, data[:1])] + regions[i + 1:])
        cases.append(regions[:i] + regions[i + 1:])
    cases.append([(o - 1, b"\0" + d) for o, d in regions])
    cases.append([(o, b"\xff" * len(d)) for o, d in regions])
    cases.append([(o + 1, d) for o, d in regions])
    stream = [struct.pack("<QQ", qwen.view.file_size, len(qwen.header)), qwen.header]
    for case in cases:
        stream.append(struct.pack("<Q", len(case)))
        for offset, data in case:
            stream += [struct.pack("<QQ", offset, len(data)), bytes(data)]
    done = subprocess.run([str(asan_driver)], check=False, input=b"".join(stream), capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    lines = done.stdout.decode().splitlines()
    assert len(lines) == len(cases)
    for case, line in zip(cases, lines):
        p = _python(qwen, qwen.header, qwen.view.file_size, lambda view, case=case: _region_reader(case))
        want = "admitted" if p.admitted else f"{p.finding.code} {p.finding.field} {p.finding.offset}"
        assert line == want, (line, want)
    assert lines[0] == "admitted" and lines[1].startswith("STORE_GEOMETRY file ")
