"""Admit a bundle folder: the bundle's own stages and each weight file's, in one order.

Note [Bundle stages]
~~~~~~~~~~~~~~~~~~~~
A bundle runs the stages of charter.diagnostics.BUNDLE_STAGES in order and stops at the first
failure; a stage of one file's admission (Note [Ordered admission]) runs for every weight file in
name order before the next stage starts, so a wrong architecture in any shard is reported before a
tensor is missed in another. The bundle's stages sit where the facts they own are cheapest:

* files      -- the exact file set (Note [Bundle paths]): present, inside the folder, regular, of
                their size; no unlisted file; the digest of every file but the weights.
* container  -- each weight file's header, through the strict reader.
* identity, metadata -- each weight file's, as the artifact contract states them.
* companions -- each companion JSON file, strict (UTF-8, no duplicate key, no NaN, at most
                MAX_COMPANION_BYTES), held to its fact key by key (Note [JSON facts]).
* tokenizer  -- each weight file's, then the special ids across the files that state them
                (Note [Special ids across files]).
* shards     -- the shard of every tensor (Note [Shard index]): index and shards both ways,
                total_size, and the contract's placement; for a GGUF split set first its split keys,
                numbering, names, version and alignment (Note [GGUF split sets]), whose metadata
                is its first split's: identity, metadata and tokenizer run there only, and the
                later splits' checks read it.
* tensors .. policy -- each weight file's, over the tensors the contract places in it (a tensor
                missing from every shard is missing from the one it is placed in).
* payload    -- opt-in: each weight file's own payload stage (its value policy: a bad value is the
                more precise finding), then its sha256 (under `files`).

The per-file stages run the artifact contract's generated checker with the file's share of the
inventory (Context.only); the bundle's facts are checked from its resolved plan.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from types import ModuleType

from charter.admission.runtime import Context, Rejected, parse_companion, read_companion
from charter.admission.view import ArtifactView, read_view
from charter.bundles.files import BundleRejected, check_files, digest_of, reject
from charter.bundles.gguf_split import SPLIT_COUNT, SPLIT_KEYS, check_split_set
from charter.bundles.json_facts import check_json
from charter.bundles.plan import BundlePlan
from charter.bundles.report import BundleReport
from charter.bundles.shards import check_shards
from charter.bundles.special_ids import check_special_ids
from charter.diagnostics import BUNDLE_STAGES, CharterError, Code, Stage
from charter.language import meets

MAX_COMPANION_BYTES = 64 << 20  # a bundle's JSON file: a large tokenizer.json is tens of MB


class _Failed(Exception):
    def __init__(self, stage: Stage, rejected, file: str | None) -> None:
        """`rejected`: a Rejected (the Python checks), or a C++ verdict's DiagnosticModel."""
        self.stage, self.file = stage, file
        self.diagnostic = rejected.diagnostic if isinstance(rejected, Rejected) else rejected


def admit_bundle(root: Path, plan: BundlePlan, checker: ModuleType, *, verify_payload: bool = False,
                 require_status: str | None = None, cpp_key: str | None = None) -> BundleReport:
    """The bundle at `root` against `plan`; `checker` is the generated checker of plan.artifact.
    `cpp_key`: each weight file's own stages (container to policy) are the C++ checker's of that
    key (charter.engines.cpp), given the file's share; the bundle's stages and the payload stage
    stay Python's, as the payload stage of one file does."""
    report = BundleReport(bundle=str(root), contract=plan.id, spec=plan.spec_path, artifact_contract=plan.artifact.id,
                          format=plan.artifact.format, status=plan.status, files=len(plan.files),
                          weight_files=len(plan.weights))
    try:
        _run(root, plan, checker, report, verify_payload, require_status, cpp_key)
    except _Failed as failed:
        report.reject(failed.stage.value, failed.diagnostic, failed.file)
    return report.finish()


def _run(root: Path, plan: BundlePlan, checker: ModuleType, report: BundleReport, verify_payload: bool,
         require_status: str | None, cpp_key: str | None) -> None:
    stages = dict(checker.STAGES)
    _bundle_stage(Stage.FILES, report, lambda: check_files(root, plan))
    views: dict[str, ArtifactView] = {}
    unreadable: tuple[str, Rejected] | None = None
    for shard in plan.weights:
        try:
            views[shard] = read_view(str(root / shard), plan.artifact.format)
        except CharterError as exc:
            unreadable = unreadable or (shard, Rejected(exc.diagnostics[0]))
    first = views.get(plan.weights[0])
    # gguf-split writes its keys even into a set of one file (-00001-of-00001)
    split_set = plan.artifact.format == "gguf" and (len(plan.weights) > 1 or (first is not None
                                                                              and SPLIT_COUNT in first.meta))
    verdicts = _cpp_verdicts(root, plan, cpp_key, require_status, split_set) if cpp_key else {}
    for shard, verdict in verdicts.items():
        if verdict.failed is Stage.CONTAINER:
            raise _Failed(Stage.CONTAINER, verdict.diagnostic, shard)
    if unreadable is not None:
        raise _Failed(Stage.CONTAINER, unreadable[1], unreadable[0])
    contexts = {shard: _context(root, plan, shard, views, split_set, require_status, cpp_key is not None)
                for shard in plan.weights}
    documents: dict[str, object] = {}  # companion -> its JSON, once the companions stage read it
    for stage in BUNDLE_STAGES[1:]:
        if stage is Stage.COMPANIONS:
            _bundle_stage(stage, report, lambda: check_companions(root, plan, documents))
        elif stage is Stage.SHARDS:
            _bundle_stage(stage, report, lambda: _shards(root, plan, views, split_set))
        elif stage is Stage.PAYLOAD and not verify_payload:
            report.record(stage.value, "skipped")
        else:
            for shard, ctx in contexts.items():
                if split_set and stage.value in HEADER_STAGES and shard != plan.weights[0]:
                    continue  # the set's metadata is the first split's (Note [GGUF split sets])
                if stage is not Stage.PAYLOAD and verdicts:
                    if verdicts[shard].failed is stage:
                        raise _Failed(stage, verdicts[shard].diagnostic, shard)
                    continue
                try:
                    stages[stage.value](ctx)
                except Rejected as r:
                    raise _Failed(stage, r, shard) from None
                if stage is Stage.PAYLOAD:  # after the file's own payload stage: a bad value or element
                    _weights_digest(root, plan, shard)  # is the more precise owner of bytes a digest also pins
            if stage is Stage.TOKENIZER:
                _bundle_stage(stage, report, lambda: check_special_ids(plan, documents, views), record=False)
            if stage is Stage.POLICY:
                _bundle_stage(stage, report, lambda: _status(plan, require_status), record=False)
            report.record(stage.value, "passed")


# The stages over a file's metadata; a GGUF split set states its metadata once, on its first split.
HEADER_STAGES = ("identity", "metadata", "tokenizer")


def _cpp_verdicts(root: Path, plan: BundlePlan, key: str, require_status: str | None, split_set: bool) -> dict:
    """Each weight file's verdict from the C++ checker `key`, over its share of the bundle."""
    from charter.engines import cpp
    from charter.engines.options import Options

    out = {}
    for shard in plan.weights:
        later = split_set and shard != plan.weights[0]
        options = Options(require_status=require_status, only=plan.held_by(shard),
                          owned_keys=SPLIT_KEYS if split_set else frozenset(), skip=HEADER_STAGES if later else ())
        out[shard] = cpp.run_file(root / shard, key, options)
    return out


def _context(root: Path, plan: BundlePlan, shard: str, views: dict[str, ArtifactView], split_set: bool,
             require_status: str | None, native_values: bool = False) -> Context:
    """The context of one weight file: its share of the inventory; in a GGUF split set, the set's
    metadata (the first split's, split keys owned by the shards stage) for the checks that read it.
    `native_values`: the payload stage's values and bounds are scanned by charter/values.hpp, as
    `--engine cpp` scans those of one file."""
    view = views[shard]
    if split_set and shard != plan.weights[0]:
        view = dataclasses.replace(view, meta=views[plan.weights[0]].meta)
    return Context(view, str(root / shard), require_status, only=plan.held_by(shard),
                   owned_keys=SPLIT_KEYS if split_set else frozenset(), native_values=native_values)


def _shards(root: Path, plan: BundlePlan, views: dict[str, ArtifactView], split_set: bool) -> None:
    if split_set:
        check_split_set([(s, views[s]) for s in plan.weights], str(plan.shards_at) if plan.shards_at else None)
    check_shards(root, plan, views)


def _bundle_stage(stage: Stage, report: BundleReport, check, record: bool = True) -> None:
    try:
        check()
    except BundleRejected as r:
        raise _Failed(stage, r, r.file) from None
    if record:
        report.record(stage.value, "passed")


def check_companions(root: Path, plan: BundlePlan, documents: dict | None = None) -> None:
    """Every companion file read as strict JSON (at most MAX_COMPANION_BYTES) and held to its fact;
    `documents` receives each file's parsed JSON (for the cross-file rules of the tokenizer stage)."""
    for path, fact in plan.companions:
        try:
            raw = read_companion(root / path, MAX_COMPANION_BYTES)
        except OSError as exc:
            raise reject(Code.COMPANION_JSON, f"companions.{path}", f"{path} cannot be read: {exc.strerror}",
                         fact.at, "strict JSON", "unreadable", path) from None
        found, data = _checked(path, raw, fact)
        if found is not None:
            raise BundleRejected(found, path)
        if documents is not None:
            documents[path] = data


# (file, sha256 of its bytes) -> (the fact, what check_json said): a battery admits the same companion
# bytes against the same fact hundreds of times, and parsing a tokenizer.json costs ~25 ms. Keyed by
# the exact bytes and an equal fact, so a hit is the verdict the check would give.
_VERIFIED: dict[tuple[str, str], tuple[object, object, object]] = {}  # ... and the parsed document


def _checked(path: str, raw: bytes, fact):
    key = (path, hashlib.sha256(raw).hexdigest())
    hit = _VERIFIED.get(key)
    if hit is not None and hit[0] == fact:
        return hit[1], hit[2]
    try:
        if len(raw) > MAX_COMPANION_BYTES:
            raise ValueError(f"more than {MAX_COMPANION_BYTES} bytes")
        data = parse_companion(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise reject(Code.COMPANION_JSON, f"companions.{path}", f"{path} is not strict JSON: {exc}", fact.at,
                     "strict JSON", "invalid", path) from None
    found = check_json(path, data, fact)
    if len(_VERIFIED) >= 256:
        _VERIFIED.clear()
    _VERIFIED[key] = (fact, found, data)
    return found, data


def _weights_digest(root: Path, plan: BundlePlan, shard: str) -> None:
    f = plan.file(shard)
    if f.sha256 is None:
        return
    actual = digest_of(root, f)
    if actual != f.sha256:
        raise _Failed(Stage.PAYLOAD, reject(Code.PAYLOAD_FILE_DIGEST, f"files.{shard}.sha256", f"{shard} has sha256 "
                      f"{actual}, expected {f.sha256}", f.sha256_at, f.sha256, actual, shard), shard)


def _status(plan: BundlePlan, required: str | None) -> None:
    if not meets(plan.status, required):
        raise reject(Code.POLICY_STATUS, "status", f"the bundle's status is {plan.status!r}; --require-status "
                     f"{required} refuses it", plan.status_at, required, plan.status)
