"""The admission runtime: generic checks that generated checkers call with a contract's literals.

Note [Ordered admission]
~~~~~~~~~~~~~~~~~~~~~~~~
A checker runs the stages of charter.diagnostics.ADMISSION_STAGES in order and stops at the first
failure. The order is part of the interface: a fact fails at the cheapest stage that owns it,
never later as a confusing symptom. Ownership rules the runtime relies on:

* container  -- the strict reader (bounds, types, extents) plus the contract's container facts.
* identity   -- the string keys naming what the artifact is (architecture, family, profile).
* metadata   -- the exact key set and the type of every key (identity and tokenizer keys
                included), then the values of metadata-owned keys.
* tokenizer  -- values of tokenizer-owned keys, special/stop ids, id domain vs logits rows.
* tensors    -- the exact name set (names matching a named exclusion are left to policy),
                then rank, shape and codec of each tensor.
* codec      -- the contract's block geometry: the block divides the row width and the byte size
                matches the extent the container declares.
* layout     -- alignment, order, overlap, gaps and trailing bytes of the extents.
* stores     -- embedded store manifests (none for plain artifacts).
* policy     -- named exclusions and the required support status.
* payload    -- opt-in; the only stage that reads tensor bytes (streamed digests, padding).

A check either returns or raises `Rejected` with exactly one Diagnostic. Checks never read YAML
and never import codegen: generated checkers pass every fact as a literal.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import hashlib
import itertools
import json
import bisect
import math
import operator
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from charter.admission.report import AdmissionReport
from charter.admission.view import ArtifactView, MetaEntry, TensorEntry, read_view
from charter.diagnostics import CharterError, Code, Diagnostic, Finding, Location, Stage, code_for
from charter.floatbits import f64_bits, float_bits
from charter.formats.ggml_types import codec_bytes, row_header
from charter.formats.gguf import MAX_HEADER_BYTES, GGUFArray
from charter.language import align_up, expand, meets
from charter.memo import FEW, IdMemo, changed_at

# Keys the container stage owns (container.alignment), never "extra" metadata.
CONTAINER_KEYS = {"gguf": {"general.alignment"}}
PAYLOAD_CHUNK = 1 << 20
RESUMED_CHUNK = 1 << 16  # the first read from a verified prefix (Note [Verified prefix]): a mutant's value block


class Rejected(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.render())
        self.diagnostic = diagnostic


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if len(value) <= 80 else repr(value[:77] + "...")
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _same_bits(ctype: str, a: float, b: float) -> bool:
    """Bit for bit, as the field holds them: -0.0 is not 0.0, one NaN is not another (Note [Float bits])."""
    return float_bits(ctype, a) == float_bits(ctype, b)


class Context:
    """The artifact under admission plus the caller's options; every check is a method."""

    def __init__(self, view: ArtifactView, path: str, require_status: str | None = None, reader=None,
                 payload_reader=None, native_values: bool | str = False, only: frozenset[str] | None = None,
                 owned_keys: frozenset[str] = frozenset(), verified_prefix: VerifiedPrefix | None = None,
                 prefixes: PrefixRecorder | None = None) -> None:
        """`only`: the tensors this file holds of a bundle's inventory (Note [Bundle stages]); the rest
        are other shards' facts. `owned_keys`: metadata keys a bundle stage owns (split keys).
        `verified_prefix`, `prefixes`: Note [Verified prefix]."""
        self.view = view
        self.only = only
        self.owned_keys = owned_keys
        self.path = path
        self.require_status = require_status
        self._excluded: tuple[str, ...] = ()
        self._reader = reader  # (offset, length) -> bytes; default: the file at `path`
        self._payload_reader = payload_reader  # the same, for the whole file the payload stage streams
        self._native_values = native_values  # value rules scanned by charter._native (the C++ engine); "both"
        self._verified_prefix = verified_prefix  # where the payload stage may start (Note [Verified prefix])
        self._prefixes = prefixes  # where the payload stage records its state as it streams

    def read(self, offset: int, length: int) -> bytes:
        """Bytes of the artifact outside the header (store manifests); a short read is a rejection."""
        if self._reader is not None:
            data = self._reader(offset, length)
        else:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                data = os.pread(fd, length, offset)
            finally:
                os.close(fd)
        if len(data) != length:
            self.fail(Code.STORE_GEOMETRY, "file", f"file ended at {offset + len(data)}, before {offset + length}",
                      None, offset + length, offset + len(data), offset)
        return data

    # --- failing -----------------------------------------------------------------------------

    def fail(self, code: Code, field: str, message: str, at: str | None, expected: object = None,
             actual: object = None, offset: int | None = None) -> None:
        raise Rejected(Diagnostic(
            code, field, message,
            None if expected is None else str(expected), None if actual is None else str(actual),
            Location.parse(at) if at else None, offset))

    def mismatch(self, code: Code, field: str, expected: object, actual: object, at: str | None,
                 offset: int | None = None, note: str = "") -> None:
        self.fail(code, field, f"expected {_show(expected)}, got {_show(actual)}{note}", at,
                  _show(expected), _show(actual), offset)

    # --- container ---------------------------------------------------------------------------

    def container_format(self, *, format: str, at: str | None) -> None:
        if self.view.format != format:
            self.mismatch(Code.CONTAINER_FORMAT, "format", format, self.view.format, at, 0)

    def container_version(self, *, version: int, at: str | None) -> None:
        if self.view.version != version:
            self.mismatch(Code.CONTAINER_VERSION, "container.version", version, self.view.version, at, 4)

    def container_alignment(self, *, alignment: int, at: str | None) -> None:
        if self.view.alignment != alignment:
            entry = self.view.meta.get("general.alignment")
            self.mismatch(Code.CONTAINER_ALIGNMENT, "container.alignment", alignment, self.view.alignment, at,
                          entry.offset if entry else None)

    def container_header_aligned(self, *, aligned: bool, at: str | None) -> None:
        if self.view.header_len_aligned != aligned:
            self.mismatch(Code.CONTAINER_HEADER, "container.header_aligned", aligned,
                          self.view.header_len_aligned, at, 0, " (header length multiple of 8)")

    # --- identity ----------------------------------------------------------------------------

    def identity(self, *, key: str, value: str, at: str | None) -> None:
        entry = self.view.meta.get(key)
        if entry is None:
            self.fail(Code.IDENTITY_MISSING, f"identity.{key}", f"key {key!r} is missing", at, value, "missing")
        if entry.type != "string":
            self.mismatch(Code.IDENTITY_MISMATCH, f"identity.{key}", "string", entry.type, at, entry.offset,
                          " (type)")
        if entry.value != value:
            code = Code.IDENTITY_ARCHITECTURE if key.endswith(".architecture") else Code.IDENTITY_MISMATCH
            self.mismatch(code, f"identity.{key}", value, entry.value, at, entry.value_offset)

    # --- metadata: key set and types ---------------------------------------------------------

    def meta_types(self, *, facts: Iterable[tuple[str, str, str | None, str | None]]) -> None:
        """(key, type, element type or None, at): presence and exact type of every pinned key."""
        for key, ctype, element, at in facts:
            entry = self.view.meta.get(key)
            if entry is None:
                self.fail(Code.METADATA_MISSING, f"metadata.{key}", f"key {key!r} is missing", at, ctype, "missing")
            if entry.type != ctype:
                self.mismatch(Code.METADATA_TYPE, f"metadata.{key}", ctype, entry.type, at, entry.type_offset)
            if element is not None and entry.element != element:
                self.mismatch(Code.METADATA_TYPE, f"metadata.{key}.element", element, entry.element, at,
                              entry.value_offset)

    def meta_key_set(self, *, pinned: Iterable[str], forbidden: Iterable[tuple[str, str | None]], extra: str,
                     at: str | None) -> None:
        for key, key_at in forbidden:
            if key in self.view.meta:
                self.fail(Code.METADATA_FORBIDDEN, f"metadata.{key}", f"forbidden key {key!r} is present", key_at,
                          "absent", "present", self.view.meta[key].offset)
        if extra == "reject":
            pinned = set(pinned) | CONTAINER_KEYS.get(self.view.format, set()) | self.owned_keys
            for key in self.view.meta:  # the keys only: entries are built on demand (LazyMeta)
                if key not in pinned:
                    entry = self.view.meta[key]
                    self.fail(Code.METADATA_UNEXPECTED, f"metadata.{key}",
                              f"key {key!r} ({entry.type}) is not in the contract (extra_keys: reject)", at,
                              "absent", "present", entry.offset)

    # --- values (metadata- or tokenizer-owned) ------------------------------------------------

    def _entry(self, key: str) -> MetaEntry:
        return self.view.meta[key]  # presence and type were established by the metadata stage

    def value(self, *, stage: str, key: str, ctype: str, value: object, at: str | None) -> None:
        entry = self._entry(key)
        actual = entry.value
        if ctype in ("float32", "float64"):
            same = _same_bits(ctype, float(actual), float(value))
        else:
            same = actual == value and type(actual) is type(value)
        if not same:
            self.mismatch(code_for(stage, Finding.VALUE), f"{stage}.{key}", value, actual, at, entry.value_offset)

    def string_digest(self, *, stage: str, key: str, sha256: str, at: str | None) -> None:
        entry = self._entry(key)
        actual = hashlib.sha256(entry.value.encode()).hexdigest()  # UTF-8, str.encode's only default
        if actual != sha256:
            self.mismatch(code_for(stage, Finding.DIGEST), f"{stage}.{key}.sha256", sha256, actual, at,
                          entry.value_offset)

    def array(self, *, stage: str, key: str, length: int, values: tuple | None, sha256: str | None,
              at: str | None) -> None:
        entry = self._entry(key)
        arr: GGUFArray = entry.value
        if arr.count != length:
            self.mismatch(code_for(stage, Finding.ARRAY_LENGTH), f"{stage}.{key}.length", length, arr.count, at,
                          arr.count_offset)
        if values is not None:
            floats = arr.elem_type.name in ("FLOAT32", "FLOAT64")
            for i, (want, got) in enumerate(zip(values, arr.items())):
                same = _same_bits(arr.elem_type.name.lower(), got, want) if floats else (
                    want == got and type(want) is type(got))
                if not same:
                    self.mismatch(code_for(stage, Finding.VALUE), f"{stage}.{key}.values[{i}]", want, got, at,
                                  arr.data_offset)
        if sha256 is not None:
            actual = arr.sha256()
            if actual != sha256:
                self.mismatch(code_for(stage, Finding.ARRAY_DIGEST), f"{stage}.{key}.sha256", sha256, actual, at,
                              arr.data_offset)

    # --- companion config (a cross-artifact constraint, checked with metadata) ---------------

    def config(self, *, file: str, facts: Iterable[tuple[str, str, object, str | None]], at: str | None) -> None:
        """Rows (dotted key, type, expected value, at) checked in the JSON file beside the artifact;
        `at` (the contract's `config.file`) is cited when that file cannot be read."""
        data = self._companion(file, at)
        for key, ctype, expected, at in facts:
            node: object = data
            for part in key.split("."):
                if not isinstance(node, dict) or part not in node:
                    self.fail(Code.METADATA_MISSING, f"config.{key}", f"{file} has no key {key!r}", at, ctype,
                              "missing")
                node = node[part]
            actual_type = _json_type(node)
            if actual_type != ctype:
                self.mismatch(Code.METADATA_TYPE, f"config.{key}", ctype, actual_type, at, note=f" ({file})")
            same = f64_bits(node) == f64_bits(expected) if ctype == "float64" else node == expected
            if not same:
                self.mismatch(Code.METADATA_VALUE, f"config.{key}", expected, node, at, note=f" ({file})")

    def _companion(self, file: str, at: str | None) -> object:
        try:
            raw = read_companion(Path(self.path).parent / file)
        except OSError as exc:
            self.fail(Code.METADATA_CONFIG, "config", f"cannot read {file} beside the artifact: {exc.strerror}", at)
        if len(raw) > MAX_COMPANION_BYTES:
            self.fail(Code.METADATA_CONFIG, "config", f"{file} is more than {MAX_COMPANION_BYTES} bytes (the limit)", at)
        try:
            return parse_companion(raw)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            self.fail(Code.METADATA_CONFIG, "config", f"{file} is not valid JSON: {exc}", at)

    # --- tokenizer ---------------------------------------------------------------------------

    def special_id(self, *, key: str, name: str, value: int, at: str | None) -> None:
        entry = self._entry(key)
        if entry.value != value:
            self.mismatch(Code.TOKENIZER_SPECIAL_ID, f"tokenizer.special.{name}", value, entry.value, at,
                          entry.value_offset, f" ({key})")

    def stop_id(self, *, key: str, ids: tuple[int, ...], at: str | None) -> None:
        entry = self._entry(key)
        if entry.value not in ids:
            self.fail(Code.TOKENIZER_STOP_ID, f"tokenizer.stop.{key}",
                      f"{key} = {entry.value} is not one of the model's stop ids {list(ids)}", at,
                      list(ids), entry.value, entry.value_offset)

    def token_domain(self, *, key: str, ids: int, at: str | None) -> None:
        entry = self._entry(key)
        if entry.value.count != ids:
            self.fail(Code.TOKENIZER_DOMAIN, "tokenizer.ids",
                      f"{key} holds {entry.value.count} tokens, but the model's tokenizer domain is {ids} ids", at,
                      ids, entry.value.count, entry.offset)

    def logits_rows(self, *, tensor: str, axis: int, rows: int, at: str | None) -> None:
        t = self.tensor_named(tensor)
        if t is None or axis >= len(t.shape):
            return  # absence and rank are facts of the tensors stage (Note [Ordered admission])
        if t.shape[axis] != rows:
            self.fail(Code.TOKENIZER_LOGITS_ROWS, "tokenizer.logits_rows",
                      f"{tensor} has {t.shape[axis]} rows on axis {axis}, but the model's physical logits rows "
                      f"are {rows}", at, rows, t.shape[axis], t.offset)

    # --- tensors -----------------------------------------------------------------------------

    def tensor_named(self, name: str) -> TensorEntry | None:
        for t in self.view.tensors:
            if t.name == name:
                return t
        return None

    def exclude(self, *, patterns: Iterable[str]) -> None:
        """Names matching a named exclusion are owned by the policy stage."""
        self._excluded = tuple(patterns)

    def tensors(self, *, rows: Iterable[tuple], at: str | None) -> None:
        """Rows (name template, repeat, role, shape, codec, at); `repeat` is ((placeholder, count), ...).
        `at` locates the contract's tensor list (the fact an unexpected tensor breaks)."""
        at_set = at
        expected = _inventory(rows)
        if self.only is not None:  # a shard's share, in contract order, at the cost of its own names
            position = _positions(expected)
            held = sorted((name for name in self.only if name in position), key=position.__getitem__)
            expected = {name: expected[name] for name in held}
        # Each loop below runs only where a test in C says it can find something (a mutation
        # battery admits thousands of variants of one header).
        actual = _by_name(self.view)
        if len(actual) != len(self.view.tensors):
            seen: set[str] = set()
            for t in self.view.tensors:
                if t.name in seen:
                    self.fail(Code.TENSOR_DUPLICATE, f"tensors.{t.name}", f"tensor {t.name!r} appears twice", None,
                              1, 2, t.offset)
                seen.add(t.name)
        change = _view_change(self.view)  # after _by_name: the first file read is known
        derived = _derived(expected, change)
        same_names = derived is not None or expected.keys() == actual.keys()  # pragma: no mutate -- cost only: one test in C for the two below
        for name in itertools.filterfalse(actual.__contains__, expected) if not same_names else ():  # pragma: no mutate -- cost only: with the same names the loop finds none
            self.fail(Code.TENSOR_MISSING, f"tensors.{name}", f"tensor {name!r} is missing", expected[name][_AT],
                      "present", "missing")
        for name in itertools.filterfalse(expected.__contains__, actual) if not same_names else ():  # pragma: no mutate -- cost only: with the same names the loop finds none
            if not self._is_excluded(name):
                self.fail(Code.TENSOR_UNEXPECTED, f"tensors.{name}", f"tensor {name!r} is not in the contract", at_set,
                          "absent", "present", actual[name].offset)
        for name in _mismatched(expected, self.view, change, derived, same_names):
            role, shape, codec, at, _ = expected[name]
            t = actual[name]
            if len(t.shape) != len(shape):
                self.mismatch(Code.TENSOR_RANK, f"tensors.{name}.rank", len(shape), len(t.shape), at, t.offset,
                              f" ({role})")
            for j, (want, got) in enumerate(zip(shape, t.shape)):
                if want != got:
                    self.mismatch(Code.TENSOR_SHAPE, f"tensors.{name}.shape[{j}]", want, got, at, t.offset,
                                  f" ({role}: expected shape {list(shape)}, got {list(t.shape)})")
            if t.codec != codec:
                self.mismatch(Code.TENSOR_CODEC, f"tensors.{name}.codec", codec, t.codec, at, t.offset)

    def _is_excluded(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in self._excluded)

    # --- codec -------------------------------------------------------------------------------

    def codecs(self, *, rows: Iterable[tuple[str, int, int, int, str | None]]) -> None:
        """Rows (codec, block elements, block bytes, row header bytes, at), checked against every
        tensor of that codec: the block divides the row, the rows of header and blocks fill the
        extent, and the file leaves room for every row's header (Note [Row headers] in
        charter.formats.ggml_types). Only the tensors `_fits` does not pass are walked here."""
        v = self.view
        geometry = {name: (block, nbytes, header, at) for name, block, nbytes, header, at in rows}
        # Only a cost: `starts` is read for a codec with a row header alone (no mutant here changes a verdict).
        starts = sorted({t.start for t in v.tensors}) if any(g[2] for g in geometry.values()) else []  # pragma: no mutate -- cost only
        for t in itertools.compress(v.tensors, map(operator.not_, _fitting(v.format, geometry).each(v.tensors))):
            block, block_bytes, header, at = geometry[t.codec]
            row = _row_width(v.format, t)
            if block <= 0 or row % block:
                self.fail(Code.CODEC_BLOCK, f"codecs.{t.codec}.block",
                          f"{t.name}: a {t.codec} block of {block} elements does not divide the row width {row}",
                          at, block, row, t.offset)
            elements = math.prod(t.shape)
            rows_n = elements // row if row else 0
            want = codec_bytes(elements, row, block, block_bytes, header)
            extent, own = t.end - t.start, row_header(v.format, t.codec)
            if want != extent and header != own:
                self.fail(Code.CODEC_ROW_HEADER, f"codecs.{t.codec}.header",
                          f"{t.name}: {rows_n} rows of a {header}-byte header and {row // block} {t.codec} blocks "
                          f"of {block_bytes} bytes are {want} bytes, but the extent holds {extent} "
                          f"({t.codec} rows carry a {own}-byte header)", at, header, own, t.offset)
            if want != extent:
                self.fail(Code.CODEC_SIZE, f"codecs.{t.codec}.bytes",
                          f"{t.name}: {elements} elements in {t.codec} blocks of {block}/{block_bytes} bytes "
                          f"are {want} bytes, but the extent holds {extent}", at, want, extent, t.offset)
            if header and rows_n:  # pragma: no mutate -- cost only: without a header or a row the band below is empty
                following = bisect.bisect_right(starts, t.start)
                room = (starts[following] if following < len(starts) else v.file_size) - t.start
                if want - rows_n * header <= room < want:
                    self.fail(Code.CODEC_ROW_HEADER, f"codecs.{t.codec}.header",
                              f"{t.name}: {rows_n} rows of {want // rows_n} bytes (a {header}-byte header and "
                              f"{row // block} blocks of {block_bytes}) need {want} bytes, but the next extent "
                              f"starts {room} bytes after it: {room // rows_n} bytes per row, a row header short",
                              at, f"{want // rows_n} bytes per row", f"{room // rows_n} bytes per row", t.offset)

    # --- layout ------------------------------------------------------------------------------

    def layout(self, *, alignment: int | None, sorted: bool, packed: bool, trailing: str, at: str | None,
               alignment_at: str | None, sorted_at: str | None, packed_at: str | None,
               trailing_at: str | None) -> None:
        v = self.view
        spans, facts = _by_extent(v)[0], _layout_facts(v)
        if alignment is not None:
            # No tensors, no data section to align (Note [Tensor-less GGUF] in charter.formats.gguf).
            if v.tensors and v.data_offset % alignment:
                self.fail(Code.LAYOUT_DATA_OFFSET, "layout.alignment",
                          f"data section starts at {v.data_offset}, not a multiple of {alignment}",
                          alignment_at, alignment, v.data_offset)
            for t in v.tensors if facts.starts_gcd % alignment else ():  # pragma: no mutate -- cost only: with every start aligned (the data offset is) the loop finds none
                relative = t.start - v.data_offset
                if relative % alignment:
                    self.fail(Code.LAYOUT_ALIGNMENT, f"tensors.{t.name}.offset",
                              f"{t.name} starts at data offset {relative}, not a multiple of {alignment}",
                              alignment_at, alignment, relative, t.offset)
        for t in v.tensors if v.tensors and (facts.lowest_start < v.data_offset or facts.highest_end > v.file_size) else ():  # pragma: no mutate -- cost only: with every extent inside the data section the loop finds none
            if t.start < v.data_offset or t.end > v.file_size:
                self.fail(Code.LAYOUT_BOUNDS, f"tensors.{t.name}.offset",
                          f"{t.name} spans [{t.start}, {t.end}), outside the data section "
                          f"[{v.data_offset}, {v.file_size})", None, f"[{v.data_offset}, {v.file_size})",
                          f"[{t.start}, {t.end})", t.offset)
        if sorted:
            for prev, t in zip(v.tensors, v.tensors[1:]) if facts.unsorted else ():  # pragma: no mutate -- cost only: with no start before the one before it the loop finds none
                if t.start < prev.start:
                    self.fail(Code.LAYOUT_ORDER, f"tensors.{t.name}.offset",
                              f"{t.name} starts at {t.start}, before {prev.name} at {prev.start} (layout.sorted)",
                              sorted_at, f">= {prev.start}", t.start, t.offset)
        for prev, t in zip(spans, spans[1:]) if facts.overlapping else ():  # pragma: no mutate -- cost only: with no extent starting before the one before it ends the loop finds none
            if t.start < prev.end:
                self.fail(Code.LAYOUT_OVERLAP, f"tensors.{t.name}.offset",
                          f"{t.name} [{t.start}, {t.end}) overlaps {prev.name} [{prev.start}, {prev.end})",
                          at, f">= {prev.end}", t.start, t.offset)
        step = alignment or 1
        if packed:
            cursor = v.data_offset
            # each extent starts where packing puts it (align_up of the last end) iff it starts on a
            # multiple of the step, less than a step after the last end
            packed_all = facts.least_gap >= 0 and facts.greatest_gap < step and not facts.starts_gcd % step  # pragma: no mutate -- cost only: it decides whether the loop that finds the diagnostic runs
            for t in spans if not packed_all else ():  # pragma: no mutate -- cost only: with every extent where packing puts it the loop finds none
                if t.start != align_up(cursor, step):  # the data section's start is aligned (checked above)
                    self.fail(Code.LAYOUT_GAP, f"tensors.{t.name}.offset",
                              f"{t.name} starts at {t.start}; packed layout puts it at {align_up(cursor, step)} "
                              f"(unowned bytes beyond alignment padding)", packed_at,
                              align_up(cursor, step), t.start, t.offset)
                cursor = t.end
        end = spans[-1].end if spans else v.data_offset
        if trailing == "reject" and v.file_size != end:
            self.fail(Code.LAYOUT_TRAILING, "layout.trailing", f"{v.file_size - end} bytes after the last extent",
                      trailing_at, end, v.file_size, end)
        if trailing == "alignment" and v.file_size > align_up(end, step):
            self.fail(Code.LAYOUT_TRAILING, "layout.trailing",
                      f"{v.file_size - end} bytes after the last extent, more than alignment padding",
                      trailing_at, align_up(end, step), v.file_size, end)

    # --- stores (charter.admission.stores, imported only for a contract that has them) ------------

    def expert_major_store(self, *, name: str, tensor: str, fields, components, at: str | None) -> None:
        from charter.admission import stores

        if self._holds(tensor):
            stores.expert_major(self, name, tensor, fields, components, at)

    def ple_store(self, *, name: str, tensor: str, fields, head_rows, at: str | None) -> None:
        from charter.admission import stores

        if self._holds(tensor):
            stores.ple_rows(self, name, tensor, fields, head_rows, at)

    def _holds(self, tensor: str) -> bool:
        """Whether this file is where `tensor` is checked: any file alone, one shard of a bundle."""
        return self.only is None or tensor in self.only

    # --- policy ------------------------------------------------------------------------------

    def exclusions(self, *, rows: Iterable[tuple]) -> None:
        """Rows (name, patterns, count key or None, source count, at): no excluded tensor is present,
        and the artifact's own inventory accounts for the excluded source tensors."""
        for name, patterns, count_key, count, at in rows:
            if count_key is not None and self.view.meta[count_key].value != count:
                entry = self.view.meta[count_key]
                self.mismatch(Code.POLICY_EXCLUSION, f"exclusions.{name}.source_count", count, entry.value, at,
                              entry.value_offset, f" ({count_key})")
            for t in self.view.tensors:
                if any(fnmatch.fnmatchcase(t.name, p) for p in patterns):
                    self.fail(Code.POLICY_EXCLUSION, f"exclusions.{name}",
                              f"tensor {t.name!r} belongs to the excluded class {name!r}", at, "absent",
                              t.name, t.offset)

    def status(self, *, status: str, at: str | None) -> None:
        required = self.require_status
        if not meets(status, required):
            self.fail(Code.POLICY_STATUS, "status",
                      f"the contract's status is {status!r}; --require-status {required} refuses it", at,
                      required, status)

    # --- payload -----------------------------------------------------------------------------

    def payload(self, *, file_sha256: str | None, tensors: Iterable[tuple[str, str, str | None]], padding: str,
                at: str | None, padding_at: str | None, values: Iterable[tuple] = (),
                bounds: Iterable[tuple] = ()) -> None:
        """Stream the file once with a bounded buffer: whole-file digest, tensor digests, zero padding,
        and the value policy (rows (name, patterns, check, at), Note [Value rules]; bounds (name,
        patterns, min, max, min_at, max_at), Note [Value bounds]). A bad value is found while its
        tensor streams, so it is reported before that tensor's digest is compared."""
        v = self.view
        wanted = {name: (sha, where) for name, sha, where in tensors}
        checked = self._value_rules(tuple(values))
        if bounds:
            from charter.admission.values import tensor_bounds

            checked.update(tensor_bounds(v.tensors, tuple(bounds), v.format, self._native_values))
        zero = padding == "zero"
        whole = hashlib.sha256() if file_sha256 is not None else None  # no digest pinned: nothing to hash
        start, prefix = 0, self._verified_prefix
        if prefix is not None:
            start = prefix.end
            if whole is not None:
                whole = prefix.sha256.copy()
        with open(self.path, "rb") if self._payload_reader is None else _ReaderFile(self._payload_reader) as f:
            pos = self._stream(f, whole, start, v.header_end)
            pos = self._stream(f, whole, pos, v.data_offset, zero_at=(padding_at or "") if zero else None)
            for t in _in_stream_order(v):
                inside = t.start < start  # the prefix ends in this tensor, or after it
                if inside and t.end <= start:
                    continue
                if not inside:
                    pos = self._stream(f, whole, pos, t.start, zero_at=(padding_at or "") if zero else None)
                digest = None
                if t.name in wanted:
                    digest = prefix.tensor_sha256.copy() if inside else hashlib.sha256()
                pos = self._stream(f, whole, pos, t.end, also=digest, values=checked.get(t.name), origin=t.start)
                if digest is not None and digest.hexdigest() != wanted[t.name][0]:
                    self.mismatch(Code.PAYLOAD_DIGEST, f"payload.tensors.{t.name}", wanted[t.name][0],
                                  digest.hexdigest(), wanted[t.name][1], t.start)
            pos = self._stream(f, whole, pos, v.file_size, zero_at=(padding_at or "") if zero else None)
            if self._prefixes is not None:
                self._prefixes.record(pos, whole, None)
        if file_sha256 is not None and whole.hexdigest() != file_sha256:
            self.mismatch(Code.PAYLOAD_FILE_DIGEST, "payload.file_sha256", file_sha256, whole.hexdigest(),
                          at)

    def _value_rules(self, rules: tuple) -> dict:
        """The tensors whose values the policy checks (charter.admission.values; numpy is imported
        only here, never on the header-only path)."""
        if not any(r[2] for r in rules):
            return {}
        from charter.admission.values import tensor_rules

        v = self.view
        # The scanner itself, not the engine's name, in the key: the selection holds the one it found
        scanner = None  # pragma: no mutate -- a part of a key: any constant keys the numpy scan alike
        if self._native_values:
            from charter import _native

            scanner = _native.first_bad_value
        key = (_names_and_codecs(v), rules, v.format, self._native_values, scanner)
        if key not in _RULES:  # a battery's value mutants share the header: select once per engine
            if len(_RULES) >= 4:  # pragma: no mutate -- cost only: how many selections are kept
                _RULES.clear()
            _RULES[key] = tensor_rules(v.tensors, rules, v.format, block_bytes_of(v.format), self._native_values)
        return dict(_RULES[key])

    def _stream(self, f, whole, start: int, end: int, zero_at: str | None = None, also=None, values=None,
                origin: int | None = None) -> int:
        """Hash [start, end) into `whole` (if any, and `also`); with `zero_at`, every byte must be zero; with
        `values` (the tensor's value rule) and `origin` (its extent's start), every block's values are
        finite. With a PrefixRecorder, reads stop at each position it asks for, to record the state there.
        A tensor's stream from a verified prefix starts at the value block a battery's mutant changed:
        its first read is short (RESUMED_CHUNK), the bad value is in it."""
        f.seek(start)
        pos, recorder, prefix = start, self._prefixes, self._verified_prefix
        step = values.chunk_bytes(PAYLOAD_CHUNK) if values is not None else PAYLOAD_CHUNK
        resumed = prefix is not None and prefix.end == start  # pragma: no mutate -- cost only: a read's size
        first = step
        if resumed and values is not None:  # pragma: no mutate -- cost only: the first read's size
            first = values.chunk_bytes(RESUMED_CHUNK)  # pragma: no mutate -- cost only: the first read's size
        while pos < end:
            stop = end if recorder is None else recorder.reached(pos, end, whole, also)
            size = first if pos == start else step  # pragma: no mutate -- cost only: the first read's size
            chunk = f.read(min(size, stop - pos))
            if not chunk:
                self.fail(Code.PAYLOAD_DIGEST, "file", f"file ended at {pos}, before {end}", None, end, pos, pos)
            if values is not None:
                bad = values.first_bad(chunk, (pos - origin) // values.block_bytes)
                if bad is not None:
                    self.fail(*values.finding(bad, origin))
            if whole is not None:
                whole.update(chunk)
            if also is not None:
                also.update(chunk)
            if zero_at is not None and chunk.count(0) != len(chunk):
                bad = pos + next(i for i, b in enumerate(chunk) if b)
                self.fail(Code.PAYLOAD_PADDING, "layout.padding", f"padding byte at {bad} is not zero", zero_at,
                          0, "nonzero", bad)
            pos += len(chunk)
        return pos


# The last selections of tensor value rules by what they read (every tensor's name and codec, the
# rules, the format, the engine and its scanner: charter.admission.values.tensor_rules reads nothing
# else).
_RULES: dict[tuple, dict] = {}


@dataclass(frozen=True)
class VerifiedPrefix:
    """Note [Verified prefix]
    ~~~~~~~~~~~~~~~~~~~~~~~~
    The mutation battery admits hundreds of value mutants of one file, each differing from the
    conforming file in a few bytes of one tensor, and the payload stage would stream every byte
    before that change again (SmolLM2: 98 MB hashed per mutant on average half-way). A caller that
    knows the bytes before `end` are those of a file this same checker's payload stage admitted
    over this same view may say so: the stage then starts at `end`, with `sha256` the whole-file
    digest state of those bytes and, when `end` falls inside a tensor, `tensor_sha256` that
    tensor's digest state (if its digest is pinned). Nothing before `end` is checked again (the
    header's and padding's bytes, earlier tensors' digests and values); everything from `end` on
    is checked as always. Inside a tensor, `end` must be a whole number of value blocks from its
    start (the value rules scan whole blocks). A wrong claim makes a wrong verdict: only the
    battery makes it, for mutants whose header and earlier bytes it holds unchanged, or whose
    checker differs only in the file digest it pins, with the prefix at the file's end
    (charter.mutation.run).

    The battery gets its prefixes from one payload pass over the conforming file, with a
    PrefixRecorder asking for the positions its mutants change first: the stage records its state
    there as it streams, and the prefixes are the caller's to use only if that pass admitted."""

    end: int
    sha256: object  # a hashlib sha256 object over the file's bytes [0, end) (None: no file digest pinned)
    tensor_sha256: object = None  # over the bytes before `end` of the tensor it falls inside, if pinned


class PrefixRecorder:
    """The positions a payload pass records a VerifiedPrefix at (Note [Verified prefix]): every
    one it streams through (its reads stop there); none before a verified prefix it resumed from."""

    def __init__(self, positions) -> None:
        self._wanted = sorted(set(positions), reverse=True)  # the next one last
        self.prefixes: dict[int, VerifiedPrefix] = {}

    def record(self, pos: int, whole, tensor) -> None:
        """Record the state at `pos` (the whole file's digest, the tensor's) if it is wanted."""
        wanted = self._wanted
        while wanted and wanted[-1] < pos:
            wanted.pop()  # before where the pass began
        if wanted and wanted[-1] == pos:
            wanted.pop()
            self.prefixes[pos] = VerifiedPrefix(pos, whole and whole.copy(), tensor and tensor.copy())

    def reached(self, pos: int, end: int, whole, tensor) -> int:
        """record() at `pos`; where a read from `pos` to `end` must stop."""
        self.record(pos, whole, tensor)
        return min(self._wanted[-1], end) if self._wanted else end


class _ReaderFile:
    """A reader `(offset, length) -> bytes` as the file object the payload stage streams (the
    mutation battery's overlay of a mutant's patched bytes)."""

    def __init__(self, read) -> None:
        self._read = read
        self._pos = 0

    def __enter__(self) -> "_ReaderFile":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def seek(self, pos: int) -> None:
        self._pos = pos

    def read(self, length: int) -> bytes:
        data = self._read(self._pos, length)
        self._pos += len(data)
        return data


def block_bytes_of(fmt: str):
    """codec -> bytes per block (GGUF: the ggml type's block; safetensors: one element)."""
    if fmt == "gguf":
        from charter.formats.ggml_types import GGML_TYPES_BY_NAME

        return lambda codec: GGML_TYPES_BY_NAME[codec].block_bytes
    from charter.formats.safetensors import DTYPE_BITS

    return lambda codec: DTYPE_BITS[codec] // 8


MAX_COMPANION_BYTES = 1 << 24


def read_companion(path: Path, limit: int | None = None) -> bytes:
    """A companion file's bytes, as both engines take them: a regular file only (a FIFO or a device
    is refused, never waited on or read without end), and at most `limit` (MAX_COMPANION_BYTES) + 1
    bytes, enough to refuse the size."""
    limit = MAX_COMPANION_BYTES if limit is None else limit
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        data = bytearray()
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
        return bytes(data)
    finally:
        os.close(fd)


def parse_companion(raw: bytes) -> object:
    """A companion file's JSON as admission reads it: UTF-8, no duplicate keys, no NaN or Infinity
    (UnicodeDecodeError, ValueError or RecursionError otherwise)."""
    return json.loads(raw.decode(), object_pairs_hook=_unique_pairs, parse_constant=_no_constant)  # UTF-8: the default


def _unique_pairs(pairs: list) -> dict:
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return type(value).__name__ if value is not None else "null"



# The last inventory expanded, as (rows, name -> fact): the shards of a bundle run one checker,
# whose tensor rows are one constant tuple, so its 1,658 names are expanded once, not once per
# shard (Note [Bundle stages]). Only a tuple is kept: it cannot change under the cache.
_EXPANDED: list[tuple[tuple, dict[str, tuple]]] = []


def _inventory(rows: Iterable[tuple]) -> dict[str, tuple]:
    """The contract's tensors by concrete name, (role, shape, codec, at), in contract order. A table
    that holds the last table's rows but at a few positions, each of those standing for the names
    the last table's row there stood for (a mutation battery's mutants of a row's shape or codec),
    takes the last table's inventory with those rows' facts, if that table named each tensor once
    (Note [Identity memo] in charter.memo)."""
    if _EXPANDED and _EXPANDED[0][0] is rows:
        return _EXPANDED[0][1]
    table = tuple(rows)
    expanded = _expanded_row.each(table)
    last = _LAST_INVENTORY[0] if _LAST_INVENTORY else None  # pragma: no mutate -- cost only: without a last table every inventory is built whole
    at = _changed_places(table, last[0]) if last is not None and last[3] else None
    if at is not None and all(list(map(_NAME_OF, expanded[i])) == list(map(_NAME_OF, last[1][i])) for i in at):
        expected = last[2].copy()
        for i in at:
            expected.update(expanded[i])
        return _kept(rows, table, expanded, expected, True, (last[2], frozenset(n for i in at for n, _ in expanded[i])))
    expected = dict(itertools.chain.from_iterable(expanded))
    return _kept(rows, table, expanded, expected, len(expected) == sum(map(len, expanded)), None)


def _kept(rows: Iterable[tuple], table: tuple, expanded: tuple, expected: dict[str, tuple], once: bool,
          patched: tuple | None) -> dict[str, tuple]:
    """`expected`, kept as the last inventory (`once`: its table named each tensor once; `patched`:
    the inventory it was patched from under the same names, and the names it changed)."""
    _LAST_INVENTORY[:] = [(table, expanded, expected, once, patched)]
    if type(rows) is tuple:
        _EXPANDED[:] = [(rows, expected)]
    return expected


# The last table: its rows, their (name, fact) pairs, its inventory, whether it named each tensor
# once, and what it was patched from (_kept).
_LAST_INVENTORY: list[tuple[tuple, tuple, dict[str, tuple], bool, tuple | None]] = []
_NAME_OF = operator.itemgetter(0)


def _expand_row(row: tuple) -> list[tuple[str, tuple]]:
    """A row's (name, fact) pairs, once per row object: a mutation battery's checkers share all but
    a row of their tables (Note [Identity memo] in charter.memo)."""
    name, repeat, role, shape, codec, at = row
    fact = (role, shape, codec, at, (shape, codec))  # the pair, made once: the tensors stage compares it
    return [(n, fact) for n in expand(name, repeat)]


_expanded_row = IdMemo(_expand_row)
# An inventory's names -> their place in it, once per inventory (the shards of a bundle share one).
_positions = IdMemo(lambda expected: {name: i for i, name in enumerate(expected)}, bound=1)
_AT, _PAIR_OF_FACT = 3, operator.itemgetter(4)  # of a fact: (role, shape, codec, at, (shape, codec))


def _names(view: ArtifactView) -> dict[str, TensorEntry]:
    """The file's tensors by name (the last of a duplicated name). A file that holds the first
    file's entries but at a few positions, each of those under the name the first file's had there
    (a mutation battery's mutant of a tensor's shape, codec or offset), takes the first file's
    table with those entries in their places, if the first file named each tensor once."""
    tensors, first, at = _like_first(view)
    if at is not None:
        names = first[1].copy()
        names.update((tensors[i].name, tensors[i]) for i in at)
        return names
    names = {t.name: t for t in tensors}
    if first is None:  # pragma: no mutate -- cost only: without a first file every table is built whole
        _FIRST_NAMES.append((tensors, names, len(names) == len(tensors), _pairs_by_name(names)))
    return names


def _pairs_of(view: ArtifactView) -> dict[str, tuple]:
    """The (shape, codec) of the file's tensors by name, as `_names` finds them, made as it is."""
    tensors, first, at = _like_first(view)
    if at is not None:
        pairs = first[3].copy()
        pairs.update((tensors[i].name, (tensors[i].shape, tensors[i].codec)) for i in at)
        return pairs
    return _pairs_by_name(_by_name(view))


def _pairs_by_name(names: dict[str, TensorEntry]) -> dict[str, tuple]:
    return {name: (t.shape, t.codec) for name, t in names.items()}


def _like_first(view: ArtifactView) -> tuple[tuple[TensorEntry, ...], tuple | None, list[int] | None]:
    """The file's tensors, the first file read, and the few places where this file holds other
    entries than that one, each under the same name (None: it is not like the first file, or the
    first file named a tensor twice). Once per file and first file: the tensors stage asks it three
    times of a file."""
    tensors, first = view.tensors, _FIRST_NAMES[0] if _FIRST_NAMES else None  # pragma: no mutate -- cost only: without a first file every table is built whole
    if _LIKE_FIRST and _LIKE_FIRST[0][0] is tensors and _LIKE_FIRST[0][1] is first:  # pragma: no mutate -- cost only: the same answer, found again
        return _LIKE_FIRST[0][2]
    at = _changed_places(tensors, first[0]) if first is not None and first[2] else None
    like = (tensors, first, at if at is not None and all(tensors[i].name == first[0][i].name for i in at) else None)
    _LIKE_FIRST[:] = [(tensors, first, like)]
    return like


_LIKE_FIRST: list[tuple] = []  # the last file's tensors, the first file then, and what _like_first found


# The first file's tensors, its table by name, whether it named each tensor once, and its tensors'
# (shape, codec) by name (the tensors stage compares them for any file that has its names).
_FIRST_NAMES: list[tuple[tuple[TensorEntry, ...], dict[str, TensorEntry], bool, dict[str, tuple]]] = []


def _changed_places(table: tuple, base: tuple) -> list[int] | None:
    """The few positions where `table` holds other objects than `base`, as long a table; None for
    more than a few, or another length: what is made of the table is then made whole."""
    if len(table) != len(base):
        return None
    at = changed_at(table, base)  # pragma: no mutate -- cost only: a position where nothing changed is patched with what is there
    return at if len(at) <= FEW else None  # pragma: no mutate -- cost only: a table that differs in more places is made whole


def _mismatched(expected: dict[str, tuple], view: ArtifactView, change: tuple | None, derived: tuple | None,
                same_names: bool) -> list[str]:
    """The names of `expected` whose (shape, codec) differs from the file's, in contract order (each
    is the file's); from the last comparison where `derived` says this one differs from it only at
    a few names (_derived), else found in C. Kept as the last comparison when both tables name the
    same tensors and the file is like the first (`change`: _view_change)."""
    pairs = _pairs(view)
    if derived is None:
        wanted, found = map(_PAIR_OF_FACT, expected.values()), map(pairs.__getitem__, expected)
        names = list(itertools.compress(expected, map(operator.ne, wanted, found)))
    else:
        before, changed = derived
        names = [n for n in before if n not in changed]
        names += [n for n in changed if _PAIR_OF_FACT(expected[n]) != pairs[n]]
        if len(names) > 1:  # pragma: no mutate -- cost only: one name is in order
            names.sort(key=_positions(expected).__getitem__)
    if same_names and change is not None:
        _LAST_COMPARED[:] = [(expected, change[0], change[1], tuple(names))]
    return names


def _derived(expected: dict[str, tuple], change: tuple | None) -> tuple[tuple[str, ...], frozenset] | None:
    """Note [Derived comparison]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    A battery's mutant compares an inventory with a file's (shape, codec) pairs that the last
    comparison compared but for a few names: one of them is the same table, the other is that
    table patched under the same names (_inventory) or a file like the first file read, as the last
    one was (_like_first). Their names are then the last comparison's, which were the same on both
    sides, and a name can compare otherwise only where either table changed: the last file's and
    this file's changed places, the inventory's patched rows. This gives the last comparison's
    mismatched names and those changed names; None where it does not hold (the comparison is then
    made whole: a one-off admission, a file whose records moved, an inventory built anew). `change`:
    the file's, _view_change."""
    if not _LAST_COMPARED:
        return None
    last_expected, first, last_changed, mismatched = _LAST_COMPARED[0]
    if change is None or change[0] is not first:
        return None
    if expected is last_expected:
        return mismatched, last_changed | change[1]
    patched = _LAST_INVENTORY[0][4] if _LAST_INVENTORY and _LAST_INVENTORY[0][2] is expected else None
    if patched is None or patched[0] is not last_expected:
        return None
    return mismatched, last_changed | change[1] | patched[1]


def _view_change(view: ArtifactView) -> tuple[tuple, frozenset[str]] | None:
    """The first file (_FIRST_NAMES) and the names of the few places where this file holds other
    entries under the same names (_like_first), or None."""
    tensors, first, at = _like_first(view)
    return None if at is None else (first, frozenset(tensors[i].name for i in at))


# The last comparison of an inventory with a file's pairs that named the same tensors on both sides
# (Note [Derived comparison]): the inventory, the first file (_FIRST_NAMES), the names where the file held
# other entries than the first, and the mismatched names in contract order.
_LAST_COMPARED: list[tuple[dict[str, tuple], tuple, frozenset[str], tuple[str, ...]]] = []
_by_name = IdMemo(_names, bound=1)  # a contract mutant's checker reads the battery's one view
_pairs = IdMemo(_pairs_of, bound=1)


def _tensor_columns(view: ArtifactView) -> tuple[list[int], list[int]]:
    """The starts and the ends of the file's tensors, in file order."""
    return list(map(_START, view.tensors)), list(map(_END, view.tensors))


def _extents(view: ArtifactView) -> tuple[list, list[int], list[int]]:
    """The file's tensors by extent (start, then end), their starts and their ends, in that order."""
    starts, ends = _columns(view)
    if all(map(operator.lt, starts, starts[1:])):  # pragma: no mutate -- cost only: a file in extent order needs no sort
        return list(view.tensors), starts, ends
    spans = sorted(view.tensors, key=lambda t: (t.start, t.end))
    return spans, list(map(_START, spans)), list(map(_END, spans))


class LayoutFacts(NamedTuple):
    """What the layout stage asks of every extent of a file, once per view: each says whether a
    loop that finds the stage's diagnostic runs (a battery's contract mutants admit one view)."""

    starts_gcd: int  # every start is a multiple of a step iff this is (0: no tensors, or all at 0)
    lowest_start: int
    highest_end: int
    unsorted: bool  # a start before the one before it, in file order
    overlapping: bool  # in extent order, a start before the end before it
    least_gap: int  # in extent order, start minus the end before it (the data section's start first)
    greatest_gap: int


def _layout_of(view: ArtifactView) -> LayoutFacts:
    starts, ends = _columns(view)
    _, span_starts, span_ends = _by_extent(view)
    gaps = list(map(operator.sub, span_starts, [view.data_offset, *span_ends]))
    return LayoutFacts(math.gcd(*starts), min(starts, default=0), max(ends, default=0),
                       any(map(operator.lt, starts[1:], starts)), any(map(operator.lt, span_starts[1:], span_ends)),
                       min(gaps, default=0), max(gaps, default=0))


_START, _END = operator.attrgetter("start"), operator.attrgetter("end")
# The payload stage's order (by start, else file order) and its value rules' key: a battery's value
# mutants read the battery's one view, and sorting its tensors cost a sixth of each.
_in_stream_order = IdMemo(lambda view: sorted(view.tensors, key=_START), bound=1)
_names_and_codecs = IdMemo(lambda view: tuple((t.name, t.codec) for t in view.tensors), bound=1)
_columns = IdMemo(_tensor_columns, bound=1)  # a contract mutant's checker reads the battery's one view
_by_extent = IdMemo(_extents, bound=1)
_layout_facts = IdMemo(_layout_of, bound=1)


def _row_width(fmt: str, t: TensorEntry) -> int:
    """The elements of one row: GGUF's ne[0], safetensors' last dim (a scalar is one element)."""
    return t.shape[0] if fmt == "gguf" else (t.shape[-1] if t.shape else 1)


def _fits(fmt: str, geometry: dict[str, tuple], t: TensorEntry) -> bool:
    """Whether the codec stage finds nothing to say of tensor `t`: its codec is not listed, or it
    has no row header and its rows are whole blocks that fill its extent. A codec with a row header
    is checked each time: its room is where the next extent starts."""
    if t.codec not in geometry:
        return True
    block, block_bytes, header, _ = geometry[t.codec]
    row = _row_width(fmt, t)
    if header or block <= 0 or row % block:
        return False
    size = codec_bytes(math.prod(t.shape), row, block, block_bytes, header)  # pragma: no mutate -- the row width enters a size only through a row header, and there is none
    return size == t.end - t.start


# The last codec geometry's `_fits`, per tensor entry: a battery admits its one view (and views
# sharing all but a few entries) under one geometry thousands of times, and the stage walked
# every tensor in Python each time (1,000 at 1,000 tensors).
_FITTING: list[tuple[tuple, IdMemo]] = []


def _fitting(fmt: str, geometry: dict[str, tuple]) -> IdMemo:
    key = (fmt, tuple((codec, block, nbytes, header) for codec, (block, nbytes, header, _) in geometry.items()))
    if not _FITTING or _FITTING[0][0] != key:  # pragma: no mutate -- cost only: a memo made afresh judges alike
        _FITTING[:] = [(key, IdMemo(functools.partial(_fits, fmt, geometry)))]
    return _FITTING[0][1]


# --- running a checker -----------------------------------------------------------------------


def admit(path: str, checker, *, verify_payload: bool = False, require_status: str | None = None,
          max_header_bytes: int = MAX_HEADER_BYTES) -> AdmissionReport:
    """Run a generated checker module over the artifact at `path` (Note [Ordered admission])."""
    try:
        view = read_view(str(path), checker.FORMAT, max_header_bytes)
    except CharterError as exc:
        report = _report(str(path), checker)
        report.reject(Stage.CONTAINER.value, exc.diagnostics[0])
        return report.finish()
    return admit_view(view, str(path), checker, verify_payload=verify_payload, require_status=require_status)


def _report(path: str, checker) -> AdmissionReport:
    return AdmissionReport(artifact=path, contract=checker.CONTRACT_ID, spec=checker.SPEC, format=checker.FORMAT,
                           status=checker.STATUS)


def admit_view(view: ArtifactView, path: str, checker, *, verify_payload: bool = False,
               require_status: str | None = None, reader=None, payload_reader=None,
               native_values: bool | str = False, verified_prefix: VerifiedPrefix | None = None,
               prefixes: PrefixRecorder | None = None, header_admitted: bool = False) -> AdmissionReport:
    """The stages after the reader, over an already parsed view (`path` serves payload, companions
    and, unless `reader` is given, store manifests; `payload_reader`, if given, serves payload;
    `native_values`: the value rules run in C++, as for the C++ engine ("both": in C++ and numpy,
    compared: charter.admission.values.BOTH); `verified_prefix`, `prefixes`: Note
    [Verified prefix]; `header_admitted`: the caller's word that this checker admitted this view's
    header stages before, with the same options and companions (Note [Admitted header] in
    charter.mutation.run): they are recorded as passed without running)."""
    report = _report(path, checker)
    ctx = Context(view, path, require_status, reader, payload_reader, native_values,
                  verified_prefix=verified_prefix, prefixes=prefixes)
    for stage, check in checker.STAGES:
        if stage == Stage.PAYLOAD.value and not verify_payload:
            report.record(stage, "skipped")
        elif header_admitted and stage != Stage.PAYLOAD.value:
            report.record(stage, "passed")
        else:
            try:
                check(ctx)
            except Rejected as r:
                report.reject(stage, r.diagnostic)
                return report.finish()
            report.record(stage, "passed")
    return report.finish()
