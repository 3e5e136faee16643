"""The rules of a GGUF split set, over the parsed views of its files (Note [GGUF split sets]).

`check_split_set` runs on views that the container stage already built (one per file,
`charter.admission.view.read_view(path, "gguf")`), so it reads no bytes and trusts no count it
has not compared; it raises `BundleRejected` (naming the split) with one SPLIT_* diagnostic
(stage `shards`) on the first violation, naming the file in the field: `files.<name>.split.no`.

Note [GGUF split sets]
~~~~~~~~~~~~~~~~~~~~~~
What llama.cpp writes and reads as a split set, from its sources (ggml-org/llama.cpp):
tools/gguf-split/gguf-split.cpp (formerly examples/gguf-split/), ggml/src/gguf.cpp (the writer
gguf-split calls), src/llama-model-loader.cpp (the loader), src/llama.cpp (`llama_split_path`,
`llama_split_prefix`), common/common.h (the key names); and gguf-py 0.19.0 (gguf/gguf_writer.py,
gguf/constants.py `Keys.Split`).

* Keys and exact types (gguf-split's `gguf_set_val_u16`/`_i32`; the loader reads them with typed
  getters that throw on another type, `GGUFMeta::GKV::get_kv`): `split.no` uint16, 0-based;
  `split.count` uint16, the number of files; `split.tensors.count` int32, the tensors of the whole
  set. gguf-py writes the same keys and types (`add_shard_kv_data`).
* Which file holds which keys: every split holds the three split keys; the first split also holds
  every KV pair of the source, in source order (`gguf_set_kv` on split 0 only, "Save all metadata
  in first split only"); the other splits hold nothing else, not even `general.architecture` or
  `general.alignment`. gguf-py alike (`kv_data[0]` holds every key; the other shards get an empty
  dict plus the split keys).
* File names: `llama_split_path` formats `%s-%05d-of-%05d.gguf` with the 1-based number and the
  count (`split.no + 1`, `split.count`), so `model-00001-of-00003.gguf` is `split.no` 0.
  `llama_split_prefix` accepts a path only if it ends with exactly that postfix after a non-empty
  prefix; the loader derives the other paths from the first split's name (`llama_get_list_splits`).
  Five digits always suffice: `split.count` is a uint16. gguf-py: `SHARD_NAME_FORMAT`
  `{:s}-{:05d}-of-{:05d}.gguf` on the output path's stem, the same names.
* Version and alignment: every split is written by a fresh `gguf_init_empty` context, GGUF
  version 3 (`GGUF_VERSION`) and alignment 32 (`GGUF_DEFAULT_ALIGNMENT`). Copying a source's
  `general.alignment` into split 0 does not change the context's alignment (`gguf_set_val_u32`
  only asserts a power of two), so a source aligned at anything but 32 gets a first split whose
  key disagrees with its 32-byte layout; `charter.conforming.gguf_split` refuses such a source,
  and one whose tensor data is not packed in header order, which gguf.cpp refuses to read.
* Tensor layout per split: the split's tensors in source order, tensor info offsets packed from 0
  at `GGML_PAD(nbytes, 32)` (`gguf_add_tensor`), n_dims trimmed of trailing 1s (`ggml_n_dims` in
  `write_tensor_meta`), the header zero-padded to 32 even in a split without tensors
  (`gguf_write_out` pads unconditionally), then each tensor's bytes followed by zeros up to a
  multiple of 32 (the last tensor too: a split ends aligned).
* KV order: current gguf.cpp's setters remove a key and append it (`gguf_remove_key` +
  `emplace_back`), and gguf-split sets `split.no`, `split.count` (placeholder 0),
  `split.tensors.count`, then `split.count` again, so every split ends with `split.no`,
  `split.tensors.count`, `split.count`. (The older ggml.c setters updated a key in place,
  `gguf_get_or_add_key`: files written then end `split.no`, `split.count`,
  `split.tensors.count`, as gguf-py's also do.) The rules below do not depend on the order.
* Splitting: `--split-max-tensors N` starts a new split before tensor i when i > 0 and
  i % N == 0; `--split-max-size` when the split's tensor sizes, each padded to 32, would pass the
  limit (gguf-py's `split_max_size` sums unpadded sizes). A split without tensors is an error
  ("one of splits have 0 tensors"), except the first under `--no-tensor-first-split`, which holds
  only the KVs (and the split keys) and no tensor, so the set has one more file. Even a single
  output is a set: `-00001-of-00001.gguf` with `split.count` 1.
* The loader (`llama_model_loader`): reads `split.count` from the file it is given; when > 1,
  requires that file's `split.no` to be 0, builds the other paths from its name, requires each
  other file's `split.no` to be its index, rejects a tensor name seen in an earlier split ("tensor
  is duplicated"), and compares the first split's `split.tensors.count` with the number of
  tensors loaded ("corrupted model"). It ignores every KV of the other splits beyond `split.no`,
  and parses each file with its own version and alignment. The first file's keys are read with a
  type check that throws; another file's `split.no` with `gguf_get_val_u16`, whose type check is a
  GGML_ASSERT: a later split whose `split.no` has another type aborts the process.

What gguf-py 0.19.0 does differently from gguf-split (GGUFWriter with `split_max_tensors`): the
split keys come in the order `split.no`, `split.count`, `split.tensors.count`; a source that
yields one shard gets no split keys and the plain name (gguf-split writes `-00001-of-00001`);
`general.architecture` is always its first key; `add_string` and `add_array` drop empty values;
n_dims is the length of the shape it is given (no trimming); a custom alignment
(`add_custom_alignment`) pads every shard at it but writes `general.alignment` only into the
first. `small_first_shard` is `--no-tensor-first-split`. For the same KVs (in gguf-split's order)
and tensors, its files equal gguf-split's except for the order of the split keys
(tests/bundles/test_gguf_split.py checks this on SmolLM2).

charter's rules are gguf-split's output, checked both ways (stricter than the loader, which
ignores what it does not read): every file holds the three keys with their exact types;
`split.no` is the file's position; `split.count` is the number of files, on every file; names
are `<prefix>-<no+1>-of-<count>.gguf` with the first split's prefix; every file has the first
split's version and alignment; a file other than the first holds no key but the split keys; no
tensor is in two files; and `split.tensors.count`, on every file, is the number of tensors of the
set. Rules run in that order, so a fact fails at its own rule, not as a symptom: a dropped split
is SPLIT_COUNT, not a name; a tensor in two splits is SPLIT_TENSOR_DUPLICATE, not a count.

The set's metadata is its first split's (as the loader reads it): identity, metadata and tokenizer
run on the first split only, and what a later split's own stages read from metadata is the set's.
The Python engine gives a later split's Context the first split's metadata; the C++ engine skips
those stages on a later split and leaves a fact it would read from metadata (an exclusion's count
key) to the first split (`Share::metadata_elsewhere` in charter/checks.hpp). Either way a wrong
count is rejected once, on the first split.
"""

from __future__ import annotations

from charter.admission.view import ArtifactView
from charter.bundles.files import BundleRejected
from charter.diagnostics import Code, Diagnostic, Location

SPLIT_NO = "split.no"
SPLIT_COUNT = "split.count"
SPLIT_TENSORS_COUNT = "split.tensors.count"

# The split keys and their exact GGUF types, in the order gguf-split writes them.
SPLIT_KEY_TYPES: dict[str, str] = {SPLIT_NO: "uint16", SPLIT_TENSORS_COUNT: "int32", SPLIT_COUNT: "uint16"}
# Owned by the bundle: a file's own metadata check must not call them extra keys (as CONTAINER_KEYS).
SPLIT_KEYS: frozenset[str] = frozenset(SPLIT_KEY_TYPES)


def split_name(prefix: str, split_no: int, split_count: int) -> str:
    """The file name of split `split_no` (0-based) of `split_count`, as `llama_split_path` formats it."""
    return f"{prefix}-{split_no + 1:05d}-of-{split_count:05d}.gguf"


def check_split_set(members: list[tuple[str, ArtifactView]], at: str | None) -> None:
    """Reject the first violation of Note [GGUF split sets] among `members` (file name, view),
    given in file-name order; `at` is the contract fact that states the set."""
    if not members:
        raise ValueError("a split set has at least one file")
    where = Location.parse(at) if at else None
    for name, view in members:
        _split_keys(name, view, where)
    for position, (name, view) in enumerate(members):
        _count_and_number(name, view, position, len(members), where)
    _file_names(members, where)
    _container(members, where)
    for name, view in members[1:]:
        _only_split_keys(name, view, where)
    total = _disjoint_tensors(members, where)
    for name, view in members:
        _tensor_count(name, view, total, where)


def _reject(code: Code, name: str, field: str, message: str, expected: object, actual: object,
            where: Location | None, offset: int | None) -> None:
    subject = f"files.{name}.{field}" if field else f"files.{name}"
    raise BundleRejected(Diagnostic(code, subject, f"{name}: {message}", str(expected), str(actual), where, offset),
                         name)


def _split_keys(name: str, view: ArtifactView, where: Location | None) -> None:
    for key, vtype in SPLIT_KEY_TYPES.items():
        if key not in view.meta:
            _reject(Code.SPLIT_KEY_MISSING, name, key, f"the split key {key!r} is absent", "present", "absent",
                    where, None)
        entry = view.meta[key]
        if entry.type != vtype:
            _reject(Code.SPLIT_KEY_TYPE, name, key, f"expected {vtype}, got {entry.type}", vtype, entry.type, where,
                    entry.type_offset)


def _count_and_number(name: str, view: ArtifactView, position: int, files: int, where: Location | None) -> None:
    count = view.meta[SPLIT_COUNT]
    if count.value != files:
        _reject(Code.SPLIT_COUNT, name, SPLIT_COUNT,
                f"split.count is {count.value}, the set has {files} file(s) (a split missing or extra?)",
                files, count.value, where, count.value_offset)
    number = view.meta[SPLIT_NO]
    if number.value != position:
        _reject(Code.SPLIT_NUMBER, name, SPLIT_NO,
                f"split.no is {number.value}, the file is split {position} (0-based) of the set in file-name order",
                position, number.value, where, number.value_offset)


def _file_names(members: list[tuple[str, ArtifactView]], where: Location | None) -> None:
    """Every name is the first split's prefix with its own numbers, as the loader derives them."""
    count = len(members)
    first = members[0][0]
    postfix = split_name("", 0, count)
    prefix = first[: -len(postfix)]
    if not first.endswith(postfix) or not prefix:
        _reject(Code.SPLIT_FILE_NAME, first, "", f"expected a name <prefix>{postfix} (llama_split_path)",
                f"<prefix>{postfix}", first, where, None)
    for position, (name, _) in enumerate(members):
        expected = split_name(prefix, position, count)
        if name != expected:
            _reject(Code.SPLIT_FILE_NAME, name, "",
                    f"expected {expected!r}: split {position} of {count} with the first split's prefix {prefix!r}",
                    expected, name, where, None)


def _container(members: list[tuple[str, ArtifactView]], where: Location | None) -> None:
    first_name, first = members[0]
    for name, view in members[1:]:
        if view.version != first.version:
            _reject(Code.SPLIT_VERSION, name, "container.version",
                    f"GGUF version {view.version}, the first split {first_name} has {first.version}",
                    first.version, view.version, where, 4)
        if view.alignment != first.alignment:
            entry = view.meta.get("general.alignment")
            _reject(Code.SPLIT_ALIGNMENT, name, "container.alignment",
                    f"alignment {view.alignment}, the first split {first_name} has {first.alignment}",
                    first.alignment, view.alignment, where, entry.value_offset if entry else None)


def _only_split_keys(name: str, view: ArtifactView, where: Location | None) -> None:
    for key in view.meta:
        if key not in SPLIT_KEYS:
            entry = view.meta[key]
            _reject(Code.SPLIT_METADATA, name, f"metadata.{key}",
                    f"key {key!r} ({entry.type}) on a split other than the first, which holds only the split keys",
                    "absent", "present", where, entry.offset)


def _disjoint_tensors(members: list[tuple[str, ArtifactView]], where: Location | None) -> int:
    """The number of tensors of the set, once no tensor is in two files."""
    home: dict[str, str] = {}
    for name, view in members:
        for tensor in view.tensors:
            other = home.setdefault(tensor.name, name)
            if other != name:
                _reject(Code.SPLIT_TENSOR_DUPLICATE, name, f"tensors.{tensor.name}",
                        f"tensor {tensor.name!r} is also in {other}", other, name, where, tensor.offset)
    return len(home)


def _tensor_count(name: str, view: ArtifactView, total: int, where: Location | None) -> None:
    entry = view.meta[SPLIT_TENSORS_COUNT]
    if entry.value != total:
        _reject(Code.SPLIT_TENSOR_COUNT, name, SPLIT_TENSORS_COUNT,
                f"split.tensors.count is {entry.value}, the set holds {total} tensors", total, entry.value, where,
                entry.value_offset)
