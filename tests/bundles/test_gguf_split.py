"""GGUF split sets: the real SmolLM2 GGUF split as gguf-split splits it, cross-checked by gguf-py,
and one mutant per rule of Note [GGUF split sets], each a real split file rewritten."""

from __future__ import annotations

import dataclasses
import hashlib
import mmap
from contextlib import ExitStack
from pathlib import Path

import gguf
import numpy as np
import pytest

from charter.admission.runtime import Rejected
from charter.admission.view import ArtifactView, read_view
from charter.bundles.gguf_split import SPLIT_KEY_TYPES, SPLIT_KEYS, check_split_set
from charter.conforming.gguf_split import (
    ggml_dims,
    laid_out,
    new_kv,
    plan_splits,
    split_gguf,
    write_gguf,
)
from charter.diagnostics import Code, Diagnostic, Location, Stage
from charter.formats.gguf import GGUFValueType, read_gguf, serialize_gguf_header
from tests.conftest import smollm2_gguf

PREFIX = "smollm2"
MAX_TENSORS = 100  # 272 tensors: 100 + 100 + 72
NAMES = [f"{PREFIX}-{i:05d}-of-00003.gguf" for i in (1, 2, 3)]
AT = "specs/bundles/smollm2-split.yaml:3:5"


@pytest.fixture(scope="module")
def split_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("split")
    split_gguf(smollm2_gguf(), out, max_tensors=MAX_TENSORS, prefix=PREFIX)
    return out


@pytest.fixture(scope="module")
def members(split_dir) -> list[tuple[str, ArtifactView]]:
    return [(name, read_view(str(split_dir / name), "gguf")) for name in NAMES]


def rejection(members: list[tuple[str, ArtifactView]]) -> Diagnostic:
    with pytest.raises(Rejected) as info:
        check_split_set(members, AT)
    d = info.value.diagnostic
    assert d.stage is Stage.SHARDS and d.location == Location.parse(AT)
    return d


def rewrite(member: Path, out: Path, *, kvs=None, tensors=None, version: int = 3, alignment: int = 32) -> Path:
    """`member` written again with other KV pairs, tensors ((info, file) pairs), version or
    alignment, every tensor's bytes copied from its file: a GGUF charter's reader accepts."""
    header = read_gguf(member)
    kvs = list(header.kvs.values()) if kvs is None else kvs
    tensors = [(t, member) for t in header.tensors] if tensors is None else tensors
    new = laid_out(version, kvs, [t for t, _ in tensors], alignment)
    with ExitStack() as files, open(out, "wb") as f:
        opened = {path: files.enter_context(open(path, "rb")) for path in {p for _, p in tensors}}
        write_gguf(f, new, [(opened[path], t.start) for t, path in tensors])
    return out


def replaced(members, index: int, path: Path, name: str | None = None):
    """`members` with the file at `index` replaced by the one at `path`."""
    out = list(members)
    out[index] = (name or members[index][0], read_view(str(path), "gguf"))
    return out


def kv_edit(member: Path, key: str, vtype: GGUFValueType | None = None, value=None, *, drop: bool = False) -> list:
    kvs = []
    for kv in read_gguf(member).kvs.values():
        if kv.key == key:
            if drop:
                continue
            kv = new_kv(key, vtype or kv.type, kv.value if value is None else value)
        kvs.append(kv)
    return kvs


# --- the split set, as gguf-split writes it -------------------------------------------------------


def test_the_real_gguf_splits_into_three_files_that_pass_every_rule(split_dir, members):
    assert sorted(p.name for p in split_dir.iterdir()) == NAMES
    assert [len(v.tensors) for _, v in members] == [100, 100, 72]
    check_split_set(members, AT)


def test_the_split_keys_are_last_with_their_exact_types_and_only_the_first_split_holds_the_rest(split_dir):
    source = read_gguf(smollm2_gguf())
    headers = [read_gguf(split_dir / name) for name in NAMES]
    first, *others = headers
    assert list(first.kvs) == [*source.kvs, "split.no", "split.tensors.count", "split.count"]
    for kv in source.kvs.values():
        assert first.kvs[kv.key][:3] == kv[:3]  # key, type, value as the source holds them
    for header in others:
        assert list(header.kvs) == ["split.no", "split.tensors.count", "split.count"]
    for number, header in enumerate(headers):
        assert {k: (kv.type.name.lower(), kv.value) for k, kv in header.kvs.items() if k in SPLIT_KEYS} == {
            "split.no": ("uint16", number), "split.tensors.count": ("int32", 272), "split.count": ("uint16", 3)}
        assert (header.version, header.alignment) == (3, 32)
    assert SPLIT_KEYS == set(SPLIT_KEY_TYPES) == {"split.no", "split.count", "split.tensors.count"}


def test_every_split_loads_in_gguf_py_and_the_set_holds_the_sources_tensors_byte_for_byte(split_dir):
    source = read_gguf(smollm2_gguf())
    seen = {}
    with open(smollm2_gguf(), "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as src:
        for name in NAMES:
            path = split_dir / name
            reader = gguf.GGUFReader(path)
            assert reader.data_offset % 32 == 0 and path.stat().st_size % 32 == 0
            for t in reader.tensors:
                assert t.name not in seen
                seen[t.name] = (tuple(int(d) for d in t.shape), int(t.tensor_type),
                                hashlib.sha256(t.data.tobytes()).hexdigest())
        expected = {t.name: (t.dims, t.ggml_type.id, hashlib.sha256(src[t.start:t.end]).hexdigest())
                    for t in source.tensors}
    assert seen == expected
    # and in source order, split after split
    order = [t.name for name in NAMES for t in read_gguf(split_dir / name).tensors]
    assert order == [t.name for t in source.tensors]


def test_gguf_py_writes_the_same_files_but_for_the_order_of_the_split_keys(split_dir, tmp_path):
    """GGUFWriter(split_max_tensors=100) given the source's KV pairs and tensors: the same names,
    tensor infos, padding and data; its split keys come as split.no, split.count,
    split.tensors.count (gguf-split: split.no, split.tensors.count, split.count)."""
    source = read_gguf(smollm2_gguf())
    writer = gguf.GGUFWriter(tmp_path / f"{PREFIX}.gguf", source.value("general.architecture"),
                             split_max_tensors=MAX_TENSORS)
    for kv in source.kvs.values():
        if kv.key != "general.architecture":  # GGUFWriter adds it first, where the source has it
            array = kv.type is GGUFValueType.ARRAY
            writer.add_key_value(kv.key, kv.value.items() if array else kv.value, gguf.GGUFValueType(kv.type),
                                 sub_type=gguf.GGUFValueType(kv.value.elem_type) if array else None)
    with open(smollm2_gguf(), "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as src:
        for t in source.tensors:
            row_bytes = t.dims[0] // t.ggml_type.block_size * t.ggml_type.block_bytes
            data = np.frombuffer(src, dtype=np.uint8, count=t.nbytes, offset=t.start)
            writer.add_tensor(t.name, data.reshape(*reversed(t.dims[1:]), row_bytes),
                              raw_dtype=gguf.GGMLQuantizationType(t.ggml_type.id))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        del data
    assert sorted(p.name for p in tmp_path.iterdir()) == NAMES
    gguf_py_order = ["split.no", "split.count", "split.tensors.count"]
    for name in NAMES:
        ours, theirs = read_gguf(split_dir / name), read_gguf(tmp_path / name)
        assert list(theirs.kvs)[-3:] == gguf_py_order
        reordered = {k: v for k, v in theirs.kvs.items() if k not in SPLIT_KEYS}
        reordered |= {k: theirs.kvs[k] for k in ("split.no", "split.tensors.count", "split.count")}
        ours_bytes, theirs_bytes = (split_dir / name).read_bytes(), (tmp_path / name).read_bytes()
        assert serialize_gguf_header(dataclasses.replace(theirs, kvs=reordered)) == ours_bytes[:ours.data_offset]
        assert ours.data_offset == theirs.data_offset
        assert ours_bytes[ours.data_offset:] == theirs_bytes[theirs.data_offset:]


def test_no_tensor_first_split_writes_a_first_file_of_kv_pairs_alone(tmp_path):
    paths = split_gguf(smollm2_gguf(), tmp_path, max_tensors=136, prefix=PREFIX, no_tensor_first_split=True)
    assert [p.name for p in paths] == [f"{PREFIX}-{i:05d}-of-00003.gguf" for i in (1, 2, 3)]
    views = [(p.name, read_view(str(p), "gguf")) for p in paths]
    assert [len(v.tensors) for _, v in views] == [0, 136, 136]
    first = read_gguf(paths[0])
    assert first.tensor_count == 0 and list(first.kvs)[-3:] == ["split.no", "split.tensors.count", "split.count"]
    assert paths[0].stat().st_size == -(-first.header_end // 32) * 32  # padded even without tensors
    check_split_set(views, AT)


def test_the_split_plan_is_gguf_splits():
    assert plan_splits(5, 2) == [[0, 1], [2, 3], [4]]
    assert plan_splits(4, 2) == [[0, 1], [2, 3]]
    assert plan_splits(5, 2, no_tensor_first_split=True) == [[], [0, 1], [2, 3], [4]]
    assert plan_splits(0, 3) == [[]]
    assert ggml_dims((576, 1)) == (576,) and ggml_dims((1,)) == (1,) and ggml_dims((1, 5, 1, 1)) == (1, 5)


def test_a_bad_request_is_refused_before_anything_is_written(tmp_path):
    for kwargs, match in [({"max_tensors": 0, "prefix": PREFIX}, "max_tensors"),
                          ({"max_tensors": 100, "prefix": ""}, "prefix"),
                          ({"max_tensors": 100, "prefix": "a/b"}, "prefix")]:
        with pytest.raises(ValueError, match=match):
            split_gguf(smollm2_gguf(), tmp_path, **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_a_source_aligned_at_other_than_32_is_refused(tmp_path):
    """gguf-split would copy general.alignment 64 into the first split and lay it out at 32."""
    writer = gguf.GGUFWriter(tmp_path / "aligned64.gguf", "llama")
    writer.add_custom_alignment(64)
    writer.add_tensor("a", np.arange(24, dtype=np.float32))
    writer.add_tensor("b", np.arange(8, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="aligned at 64"):
        split_gguf(tmp_path / "aligned64.gguf", out, max_tensors=1, prefix="x")
    assert not out.exists()


def test_a_source_whose_tensors_are_not_packed_in_header_order_is_refused(split_dir, tmp_path):
    """gguf.cpp reads only packed data ("tensor has offset X, expected Y"), so gguf-split cannot
    split such a file; charter's reader accepts it (order and gaps are the layout stage's)."""
    member = split_dir / NAMES[2]
    header = read_gguf(member)
    swapped = dataclasses.replace(header, tensors=[header.tensors[1], header.tensors[0], *header.tensors[2:]])
    unpacked = tmp_path / "unpacked.gguf"
    unpacked.write_bytes(serialize_gguf_header(swapped) + member.read_bytes()[header.data_offset:])
    assert read_view(str(unpacked), "gguf").tensors[0].name == header.tensors[1].name
    with pytest.raises(ValueError, match="packed in header order"):
        split_gguf(unpacked, tmp_path / "out", max_tensors=10, prefix="x")
    assert not (tmp_path / "out").exists()


def test_a_failed_write_leaves_no_split_behind(tmp_path):
    (tmp_path / NAMES[2]).mkdir()  # the last split cannot be renamed into place
    with pytest.raises(OSError):
        split_gguf(smollm2_gguf(), tmp_path, max_tensors=MAX_TENSORS, prefix=PREFIX)
    assert [p.name for p in tmp_path.iterdir()] == [NAMES[2]]


# --- one mutant per rule ----------------------------------------------------------------------------


def test_a_missing_split_key(split_dir, members, tmp_path):
    path = rewrite(split_dir / NAMES[2], tmp_path / NAMES[2], kvs=kv_edit(split_dir / NAMES[2], "split.no", drop=True))
    d = rejection(replaced(members, 2, path))
    assert (d.code, d.field) == (Code.SPLIT_KEY_MISSING, f"files.{NAMES[2]}.split.no")


@pytest.mark.parametrize("key, vtype", [("split.count", GGUFValueType.UINT32),
                                        ("split.no", GGUFValueType.INT16),
                                        ("split.tensors.count", GGUFValueType.UINT32)],
                         ids=["split.count-uint32", "split.no-int16", "split.tensors.count-uint32"])
def test_a_split_key_of_another_type(split_dir, members, tmp_path, key, vtype):
    path = rewrite(split_dir / NAMES[1], tmp_path / NAMES[1], kvs=kv_edit(split_dir / NAMES[1], key, vtype))
    d = rejection(replaced(members, 1, path))
    assert (d.code, d.field) == (Code.SPLIT_KEY_TYPE, f"files.{NAMES[1]}.{key}")
    assert (d.expected, d.actual) == (SPLIT_KEY_TYPES[key], vtype.name.lower())


def test_a_split_number_that_is_not_the_files_position(split_dir, members, tmp_path):
    path = rewrite(split_dir / NAMES[1], tmp_path / NAMES[1], kvs=kv_edit(split_dir / NAMES[1], "split.no", value=2))
    d = rejection(replaced(members, 1, path))
    assert (d.code, d.field, d.expected, d.actual) == (Code.SPLIT_NUMBER, f"files.{NAMES[1]}.split.no", "1", "2")


def test_a_split_count_that_is_not_the_number_of_files(split_dir, members, tmp_path):
    path = rewrite(split_dir / NAMES[2], tmp_path / NAMES[2], kvs=kv_edit(split_dir / NAMES[2], "split.count", value=4))
    d = rejection(replaced(members, 2, path))
    assert (d.code, d.field, d.expected, d.actual) == (Code.SPLIT_COUNT, f"files.{NAMES[2]}.split.count", "3", "4")


def test_a_dropped_split_is_a_count_not_a_name(members):
    d = rejection([members[0], members[2]])
    assert (d.code, d.field, d.expected, d.actual) == (Code.SPLIT_COUNT, f"files.{NAMES[0]}.split.count", "2", "3")


@pytest.mark.parametrize("index, delta", [(1, 1), (0, -1), (2, 1)])
def test_a_tensor_count_off_by_one(split_dir, members, tmp_path, index, delta):
    name = NAMES[index]
    kvs = kv_edit(split_dir / name, "split.tensors.count", value=272 + delta)
    d = rejection(replaced(members, index, rewrite(split_dir / name, tmp_path / name, kvs=kvs)))
    assert (d.code, d.field, d.expected, d.actual) == (
        Code.SPLIT_TENSOR_COUNT, f"files.{name}.split.tensors.count", "272", str(272 + delta))


def test_a_tensor_left_out_of_the_set_leaves_the_count_short(split_dir, members, tmp_path):
    member = split_dir / NAMES[2]
    path = rewrite(member, tmp_path / NAMES[2], tensors=[(t, member) for t in read_gguf(member).tensors[:-1]])
    d = rejection(replaced(members, 2, path))
    assert (d.code, d.field, d.expected, d.actual) == (
        Code.SPLIT_TENSOR_COUNT, f"files.{NAMES[0]}.split.tensors.count", "271", "272")


def test_a_tensor_in_two_splits(split_dir, members, tmp_path):
    stolen = read_gguf(split_dir / NAMES[1]).tensors[0]
    own = [(t, split_dir / NAMES[2]) for t in read_gguf(split_dir / NAMES[2]).tensors]
    path = rewrite(split_dir / NAMES[2], tmp_path / NAMES[2], tensors=[*own, (stolen, split_dir / NAMES[1])])
    d = rejection(replaced(members, 2, path))
    assert (d.code, d.field) == (Code.SPLIT_TENSOR_DUPLICATE, f"files.{NAMES[2]}.tensors.{stolen.name}")
    assert d.expected == NAMES[1]


@pytest.mark.parametrize("index, name", [
    (1, f"{PREFIX}-00002-00002-of-00003.gguf"),  # another prefix (sorting where the file was)
    (2, f"{PREFIX}-00003-of-00004.gguf"),  # another count
    (1, f"{PREFIX}-00002-of-00003.GGUF"),  # another extension
])
def test_a_renamed_split(members, index, name):
    renamed = list(members)
    renamed[index] = (name, members[index][1])
    assert [n for n, _ in renamed] == sorted(n for n, _ in renamed)  # still in file-name order
    d = rejection(renamed)
    assert (d.code, d.field) == (Code.SPLIT_FILE_NAME, f"files.{name}")
    assert d.expected == NAMES[index]


def test_a_first_split_without_the_pattern(members):
    renamed = [(f"{PREFIX}.gguf", members[0][1]), *members[1:]]
    d = rejection(renamed)
    assert (d.code, d.field) == (Code.SPLIT_FILE_NAME, f"files.{PREFIX}.gguf")


def test_a_split_of_another_version(split_dir, members, tmp_path):
    path = rewrite(split_dir / NAMES[2], tmp_path / NAMES[2], version=2)
    d = rejection(replaced(members, 2, path))
    assert (d.code, d.field, d.expected, d.actual) == (
        Code.SPLIT_VERSION, f"files.{NAMES[2]}.container.version", "3", "2")


def test_a_split_of_another_alignment(split_dir, members, tmp_path):
    member = split_dir / NAMES[1]
    kvs = [*read_gguf(member).kvs.values(), new_kv("general.alignment", GGUFValueType.UINT32, 64)]
    path = rewrite(member, tmp_path / NAMES[1], kvs=kvs, alignment=64)
    assert read_view(str(path), "gguf").alignment == 64
    d = rejection(replaced(members, 1, path))
    assert (d.code, d.field, d.expected, d.actual) == (
        Code.SPLIT_ALIGNMENT, f"files.{NAMES[1]}.container.alignment", "32", "64")


@pytest.mark.parametrize("key", ["general.name", "general.alignment"])
def test_a_key_other_than_the_split_keys_on_a_later_split(split_dir, members, tmp_path, key):
    member = split_dir / NAMES[2]
    extra = new_kv(key, GGUFValueType.STRING, "SmolLM2") if key == "general.name" else \
        new_kv(key, GGUFValueType.UINT32, 32)  # the alignment it has anyway: only the key is extra
    path = rewrite(member, tmp_path / NAMES[2], kvs=[*read_gguf(member).kvs.values(), extra])
    d = rejection(replaced(members, 2, path))
    assert (d.code, d.field) == (Code.SPLIT_METADATA, f"files.{NAMES[2]}.metadata.{key}")


def test_the_first_split_may_hold_any_key(members):
    assert "general.architecture" in members[0][1].meta  # and the set passes (the first test)
    check_split_set(members, None)


def test_an_empty_set_is_a_callers_error():
    with pytest.raises(ValueError, match="at least one file"):
        check_split_set([], AT)
