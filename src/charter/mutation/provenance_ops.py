"""Mutants of a provenance contract and of its fixture file (docs/provenance.md, "Provenance battery").

A provenance contract pins, per array, a class, a producer, inputs, a dtype, a shape and a
digest (charter.provenance). Each mutant here changes one of those facts, in the contract (a
mutated copy of the YAML data, validated as charter.contract.load validates it) or in the fixture (a
mutated .npz, written by the runner into a temporary directory: the shipped files are never
touched), and carries the diagnostic `charter fixtures verify` must then report: stage, code and
field (Note [Mutation verdicts] in charter.mutation.mutant). FIXTURE_* codes belong to stage
"spec" (charter.diagnostics), and so do the contract language's own refusals (SPEC_SCHEMA,
REF_DANGLING), which are predicted with their exact field too.

Contract operators, per array `n` at index `i`:

    relabel <class>              class -> each other class, nothing else changed. Every class
                                 requires a producer field no other class has, so the contract
                                 language refuses it: SPEC_SCHEMA arrays[i]
    relabel <class>, completed   the same, plus placeholders for the fields the new class
                                 requires, so the label loads; verify refuses a producer field the
                                 new class does not use: FIXTURE_CLASS n.producer.<f> (or n.checks)
    edit package                 upstream: FIXTURE_PRODUCER n.producer.package (not installed)
    bump version                 upstream: last character of the pin: FIXTURE_VERSION n.producer.version
    sibling module               last character of the module (same package tree), and
    other package                first character of its top-level name: FIXTURE_PRODUCER
                                 n.producer.module, except that a cross-check moved out of
                                 charter.oracles is FIXTURE_CLASS n.producer.module
    edit callable                last character of the callable's name: FIXTURE_PRODUCER n.producer.callable
    drop seed / add seed         controls: FIXTURE_SEED n.producer / n.producer.seed
    drop rule                    controls: SPEC_SCHEMA arrays[i]
    checks its producer          cross-checks: `checks` inside the producer's own module: SPEC_SCHEMA arrays[i]
    edit source model / constant / artifact, flip source sha256
                                 derived: FIXTURE_SOURCE n.producer.derived_from
    flip one bit                 the digest: FIXTURE_DIGEST n.sha256
    other dtype / numpy alias    a dtype of the same size and another kind (a model constant:
                                 float64, which holds any constant, so the label cannot also
                                 contradict its source); the same dtype spelled as numpy's type
                                 string (`<f4`): FIXTURE_DTYPE n.dtype
    last dim +1 / append dim 1   FIXTURE_SHAPE n.shape (append dim 1 keeps the element count)
    drop label                   the array becomes unlabelled: FIXTURE_UNLABELLED n; if another
                                 array takes it as input, the contract refuses first: SPEC_SCHEMA
                                 arrays[j].inputs (j: the first user, after the drop)
    missing input                one input renamed to a name no array has: SPEC_SCHEMA arrays[i].inputs
    header fixture / model / artifact, edit one char
                                 REF_DANGLING fixture / model / artifact

Fixture operators (side "artifact": the fixture is the file verified):

    drop array                   FIXTURE_MISSING n
    edit one element             the low byte of element 0: FIXTURE_DIGEST n.sha256; for a model
                                 constant, FIXTURE_SOURCE n.producer.derived_from, then the digest
    big-endian                   the same values stored big-endian (the digest does not change):
                                 FIXTURE_DTYPE n.dtype
    append dim 1                 the same elements stored with one more dim: FIXTURE_SHAPE n.shape
    add unlabelled array         FIXTURE_UNLABELLED <name>
    truncate / pickled member / duplicate member
                                 FIXTURE_UNREADABLE fixture

A mutant changes one fact, so verify must report exactly the expected diagnostic; a mutant that
legitimately breaks two pinned facts (a model constant's stored value is also pinned by its
digest) lists the second in `also`. Anything else verify reports is a cascade, judged a
regression (charter.mutation.provenance_run).

Acceptance controls (must verify clean): the unchanged contract and fixture; the fixture's
members in reverse order, DEFLATE-compressed, or stored in Fortran order (a digest names an
array's value, not the file's bytes: Note [Array digest]); the labels in reverse order (verify
matches arrays by name; spec order only fixes the order `capture` writes, which the
byte-identity test of the shipped fixtures covers).

Declared equivalences (listed, not run): `description`, `id`, `status` (no fixed array
refutes them) and a control's `rule` text (the rule in words; the generator is the checked
module and callable).

Facts `verify` does not check, so no mutant is generated for them (verify is offline and runs no
producer; `charter fixtures capture` reproduces the arrays and refutes them): a control's seed
value, a tuple result index that exists (`name[0]` -> `name[1]`), the tensor name and block range
of an artifact source, and the name in `checks` (only its independence is checked).
"""

from __future__ import annotations

import copy
import io
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from charter.diagnostics import Code
from charter.mutation.mutant import Expect, Mutant
from charter.provenance.npz import npy_bytes, npz_bytes

UP, CROSS, CONTROL, DERIVED = "upstream_capture", "independent_crosscheck", "contract_control", "derived_metadata"
CLASSES = (UP, CROSS, CONTROL, DERIVED)
# The producer fields each class uses (docs/provenance.md, "The four classes"), in the order
# the docs list them; verify reports the first one a label's class does not use.
PRODUCER_FIELDS = ("package", "version", "module", "callable", "rule", "seed", "derived_from")
USES = {
    UP: {"package", "version", "module", "callable"},
    CROSS: {"module", "callable"},
    CONTROL: {"module", "callable", "rule", "seed"},
    DERIVED: {"derived_from"},
}
# What the contract language requires of each class, filled with placeholders by "completed".
PLACEHOLDERS = {
    UP: {"package": "relabelled", "version": "0", "callable": "relabelled"},
    CROSS: {"module": "charter.oracles.relabelled", "callable": "relabelled"},
    CONTROL: {"rule": "relabelled: no rule was followed"},
    DERIVED: {"derived_from": "model relabelled constant relabelled"},
}
CROSS_CHECKS = "charter._native.relabelled"
ORACLES = "charter.oracles"
UNLABELLED = "unlabelled_extra"

EQUIVALENT = {
    "description": "documentation: not a fact about the fixture",
    "id": "the id names the contract; verify checks the fixture against its labels, not the contract's name",
    "status": "the status bounds the claims made with the fixture; no stored array can refute it",
    "rule": "the rule in words, for people; the generator that follows it is producer.module/callable (checked)",
}


@dataclass(frozen=True)
class ProvenanceMutant(Mutant):
    """A Mutant whose one change legitimately breaks more than one pinned fact: `also` lists the
    (code, field) verify must report after the expected one, in order."""

    also: tuple[tuple[Code, str], ...] = ()


def _verify(code: Code, field: str) -> Expect:
    return Expect.of(code, field)


def _edit(text: str, at: int) -> str:
    """One character of `text` replaced (`x`, or `y` where it already is `x`)."""
    at %= len(text)
    return text[:at] + ("x" if text[at] != "x" else "y") + text[at + 1:]


def _bump(version: str) -> str:
    """The last character of a version changed: a digit counts up (9 -> 0), anything else -> 0."""
    last = version[-1]
    return version[:-1] + (str((int(last) + 1) % 10) if last.isdigit() else "0")


def _other_dtype(dtype: str) -> str:
    """A dtype of the same size and another kind (the same bytes could be read as either)."""
    d = np.dtype(dtype)
    if d.itemsize == 1:
        return "int8" if d.name != "int8" else "uint8"
    if d.kind == "c":
        return np.dtype(f"f{d.itemsize}").name if d.itemsize <= 8 else "float64"
    return np.dtype(f"{'i' if d.kind == 'f' else 'f'}{d.itemsize}").name


# --- contract mutants ---------------------------------------------------------------------------


def contract_mutants(data: dict) -> Iterator[Mutant]:
    arrays = data["arrays"]
    names = [a["name"] for a in arrays]

    def mutant(target: str, op: str, expect: Expect | None, change: Callable[[dict], None] | None = None,
               equivalent: str | None = None, also: tuple = ()) -> ProvenanceMutant:
        make = None
        if change is not None and equivalent is None:
            def make(change=change):
                out = copy.deepcopy(data)
                change(out)
                return out
        return ProvenanceMutant("contract", target, op, expect, make, equivalent, also=also)

    yield mutant("contract", "unchanged", None, lambda d: None)
    yield mutant("arrays", "reverse label order", None, lambda d: d["arrays"].reverse())
    for key in ("description", "id", "status"):
        if key in data:
            yield mutant(key, "edit one char", None, equivalent=EQUIVALENT[key])
    for key in ("fixture", "model", "artifact"):
        if data.get(key):
            value = data[key]
            yield mutant(key, "edit one char", _verify(Code.REF_DANGLING, key),
                         lambda d, k=key, v=value: d.__setitem__(k, _edit(v, len(v) // 2)))
    for i, label in enumerate(arrays):
        yield from _label_mutants(mutant, i, label, names, arrays)


def _label_mutants(mutant, i: int, label: dict, names: list[str], arrays: list[dict]) -> Iterator[Mutant]:
    n, cls, producer = label["name"], label["class"], label["producer"]

    def at(*path):
        def set_(d, value):
            node = d["arrays"][i]
            for p in path[:-1]:
                node = node[p]
            node[path[-1]] = value
        return set_

    def set_to(path: tuple, value):
        return lambda d: at(*path)(d, value)

    # class
    for other in CLASSES:
        if other == cls:
            continue
        yield mutant(f"{n}.class", f"relabel {other}", _verify(Code.SPEC_SCHEMA, f"arrays[{i}]"),
                     set_to(("class",), other))
        yield mutant(f"{n}.class", f"relabel {other}, completed", _completed_expect(label, other),
                     lambda d, o=other: _complete(d["arrays"][i], o))
    # producer
    if cls == UP:
        yield mutant(f"{n}.producer.package", "edit package",
                     _verify(Code.FIXTURE_PRODUCER, f"{n}.producer.package"),
                     set_to(("producer", "package"), _edit(producer["package"], -1)))
        yield mutant(f"{n}.producer.version", "bump version", _verify(Code.FIXTURE_VERSION, f"{n}.producer.version"),
                     set_to(("producer", "version"), _bump(producer["version"])))
    if producer.get("module") and cls in (UP, CROSS, CONTROL):
        for op, moved in (("sibling module", _edit(producer["module"], -1)),
                          ("other package", _edit(producer["module"], 0))):
            # a cross-check computed outside charter.oracles is a class violation, not a lookup failure
            code = Code.FIXTURE_CLASS if cls == CROSS and not moved.startswith(ORACLES + ".") else Code.FIXTURE_PRODUCER
            yield mutant(f"{n}.producer.module", op, _verify(code, f"{n}.producer.module"),
                         set_to(("producer", "module"), moved))
    if producer.get("callable") and cls in (UP, CROSS, CONTROL):
        name, bracket, index = producer["callable"].partition("[")
        yield mutant(f"{n}.producer.callable", "edit callable",
                     _verify(Code.FIXTURE_PRODUCER, f"{n}.producer.callable"),
                     set_to(("producer", "callable"), _edit(name, -1) + bracket + index))
    if cls == CONTROL:
        if "seed" in producer:
            yield mutant(f"{n}.producer.seed", "drop seed", _verify(Code.FIXTURE_SEED, f"{n}.producer"),
                         lambda d: d["arrays"][i]["producer"].pop("seed"))
        else:
            yield mutant(f"{n}.producer.seed", "add seed", _verify(Code.FIXTURE_SEED, f"{n}.producer.seed"),
                         set_to(("producer", "seed"), 1))
        yield mutant(f"{n}.producer.rule", "edit one char", None, equivalent=EQUIVALENT["rule"])
        yield mutant(f"{n}.producer.rule", "drop rule", _verify(Code.SPEC_SCHEMA, f"arrays[{i}]"),
                     lambda d: d["arrays"][i]["producer"].pop("rule"))
    if cls == CROSS:
        yield mutant(f"{n}.checks", "checks its producer", _verify(Code.SPEC_SCHEMA, f"arrays[{i}]"),
                     set_to(("checks",), f"{producer['module']}.{producer['callable'].partition('[')[0]}"))
    if cls == DERIVED:
        yield from _source_mutants(mutant, n, producer["derived_from"], set_to)
    # value facts
    digest = label["sha256"]
    yield mutant(f"{n}.sha256", "flip one bit", _verify(Code.FIXTURE_DIGEST, f"{n}.sha256"),
                 set_to(("sha256",), digest[:-1] + format(int(digest[-1], 16) ^ 1, "x")))
    # A model constant's label gets a float dtype, which can hold any constant: another kind could
    # make the label contradict its source (an integer label for 1e-5), a second, legitimate finding.
    other = (("float32" if label["dtype"] == "float64" else "float64") if _is_constant(label)
             else _other_dtype(label["dtype"]))
    yield mutant(f"{n}.dtype", "other dtype", _verify(Code.FIXTURE_DTYPE, f"{n}.dtype"), set_to(("dtype",), other))
    yield mutant(f"{n}.dtype", "numpy alias", _verify(Code.FIXTURE_DTYPE, f"{n}.dtype"),
                 set_to(("dtype",), np.dtype(label["dtype"]).str))
    shape = list(label["shape"])
    if shape:
        yield mutant(f"{n}.shape", "last dim +1", _verify(Code.FIXTURE_SHAPE, f"{n}.shape"),
                     set_to(("shape",), shape[:-1] + [shape[-1] + 1]))
    yield mutant(f"{n}.shape", "append dim 1", _verify(Code.FIXTURE_SHAPE, f"{n}.shape"),
                 set_to(("shape",), shape + [1]))
    # the label itself
    rest = [a for a in arrays if a is not label]
    users = [j for j, a in enumerate(rest) if n in a.get("inputs", [])]
    expect = (_verify(Code.SPEC_SCHEMA, f"arrays[{users[0]}].inputs") if users
              else _verify(Code.FIXTURE_UNLABELLED, n))
    yield mutant(n, "drop label", expect, lambda d: d["arrays"].pop(i))
    for k, source in enumerate(label.get("inputs", [])):
        missing = source + "_missing"
        while missing in names:
            missing += "_"
        yield mutant(f"{n}.inputs[{k}]", "missing input", _verify(Code.SPEC_SCHEMA, f"arrays[{i}].inputs"),
                     set_to(("inputs", k), missing))


def _is_constant(label: dict) -> bool:
    """A derived model constant: verify compares its stored value with the model contract's."""
    return label["class"] == DERIVED and str(label["producer"].get("derived_from", "")).startswith("model ")


def _completed_expect(label: dict, new_class: str) -> Expect:
    fields = set(label["producer"]) | set(PLACEHOLDERS[new_class])
    for f in PRODUCER_FIELDS:
        if f in fields and f not in USES[new_class]:
            return _verify(Code.FIXTURE_CLASS, f"{label['name']}.producer.{f}")
    assert "checks" in label and new_class != CROSS, (label["name"], new_class)
    return _verify(Code.FIXTURE_CLASS, f"{label['name']}.checks")


def _complete(label: dict, new_class: str) -> None:
    label["class"] = new_class
    for key, value in PLACEHOLDERS[new_class].items():
        label["producer"].setdefault(key, value)
    if new_class == CROSS:
        label.setdefault("checks", CROSS_CHECKS)


def _source_mutants(mutant, n: str, source: str, set_to) -> Iterator[Mutant]:
    """derived_from: the statement is the producer. Only what verify follows offline is mutated."""
    field = f"{n}.producer.derived_from"
    words = source.split(" ")
    path = ("producer", "derived_from")

    def word(index: int, op: str, new: str) -> Mutant:
        return mutant(field, op, _verify(Code.FIXTURE_SOURCE, field),
                      set_to(path, " ".join(words[:index] + [new] + words[index + 1:])))

    if words[0] == "model" and len(words) == 4:
        yield word(1, "edit source model", _edit(words[1], -1))
        yield word(3, "edit source constant", _edit(words[3], -1))
    elif words[0] == "artifact" and len(words) >= 3 and words[2].startswith("sha256:"):
        yield word(1, "edit source artifact", _edit(words[1], -1))
        digest = words[2]
        yield word(2, "flip source sha256", digest[:-1] + format(int(digest[-1], 16) ^ 1, "x"))
    yield mutant(field, "not the grammar", _verify(Code.FIXTURE_SOURCE, field), set_to(path, "derived by hand"))


# --- fixture mutants ----------------------------------------------------------------------------


def _npy(array: np.ndarray, *, allow_pickle: bool = False) -> bytes:
    """numpy's own .npy bytes, keeping byte order and memory order (npz_bytes canonicalizes both)."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=(1, 0), allow_pickle=allow_pickle)
    return buf.getvalue()


def _zip(members: list[tuple[str, bytes]], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate-member mutant
        with zipfile.ZipFile(buf, "w") as zf:
            for name, payload in members:
                info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = compression
                zf.writestr(info, payload)
    return buf.getvalue()


def _element_changed(a: np.ndarray) -> np.ndarray:
    out = np.array(a, copy=True)
    flat = out.reshape(-1).view(np.uint8)
    low = 0 if out.dtype.byteorder != ">" else out.dtype.itemsize - 1
    flat[low] ^= 1
    return out


def fixture_mutants(fixture: str, arrays: dict[str, np.ndarray], raw: bytes, labels: list[dict]) -> Iterator[Mutant]:
    """`make()` returns the bytes of the mutated .npz."""
    items = list(arrays.items())
    by_name = {label["name"]: label for label in labels}

    def mutant(target: str, op: str, expect: Expect | None, make, also: tuple = ()) -> ProvenanceMutant:
        return ProvenanceMutant("artifact", target, op, expect, make, None, also=also)

    def replaced(name: str, payload: Callable[[np.ndarray], bytes]):
        return lambda: _zip([(k, payload(v) if k == name else npy_bytes(v)) for k, v in items])

    yield mutant(fixture, "unchanged", None, lambda: raw)
    yield mutant(fixture, "reverse member order", None, lambda: npz_bytes(items[::-1]))
    yield mutant(fixture, "deflate members", None,
                 lambda: _zip([(k, npy_bytes(v)) for k, v in items], zipfile.ZIP_DEFLATED))
    if any(v.ndim > 1 for _, v in items):
        yield mutant(fixture, "fortran order", None,
                     lambda: _zip([(k, _npy(np.asfortranarray(v)) if v.ndim > 1 else npy_bytes(v)) for k, v in items]))
    for name, array in items:
        target = f"{fixture}:{name}"
        label = by_name.get(name)
        yield mutant(target, "drop array", _verify(Code.FIXTURE_MISSING, name),
                     lambda n=name: npz_bytes([(k, v) for k, v in items if k != n]))
        if label is None:
            continue
        constant = _is_constant(label)
        if array.size:
            source = f"{name}.producer.derived_from"
            digest = (Code.FIXTURE_DIGEST, f"{name}.sha256")
            expect, also = (_verify(Code.FIXTURE_SOURCE, source), (digest,)) if constant else (_verify(*digest), ())
            yield mutant(target, "edit one element", expect,
                         lambda n=name: npz_bytes([(k, _element_changed(v) if k == n else v) for k, v in items]),
                         also)
        if array.dtype.itemsize > 1:
            yield mutant(target, "big-endian", _verify(Code.FIXTURE_DTYPE, f"{name}.dtype"),
                         replaced(name, lambda v: _npy(v.astype(v.dtype.newbyteorder(">")))))
        yield mutant(target, "append dim 1", _verify(Code.FIXTURE_SHAPE, f"{name}.shape"),
                     replaced(name, lambda v: npy_bytes(v.reshape(v.shape + (1,)))))
    extra = UNLABELLED
    while extra in arrays:
        extra += "_"
    yield mutant(f"{fixture}:{extra}", "add unlabelled array", _verify(Code.FIXTURE_UNLABELLED, extra),
                 lambda: npz_bytes(items + [(extra, np.zeros(3, dtype=np.float32))]))
    yield mutant(fixture, "truncate", _verify(Code.FIXTURE_UNREADABLE, "fixture"), lambda: raw[: len(raw) // 2])
    yield mutant(fixture, "pickled member", _verify(Code.FIXTURE_UNREADABLE, "fixture"),
                 lambda: _zip([(k, npy_bytes(v)) for k, v in items]
                              + [(extra, _npy(np.array([1, "x"], dtype=object), allow_pickle=True))]))
    first = items[0][0]
    yield mutant(fixture, "duplicate member", _verify(Code.FIXTURE_UNREADABLE, "fixture"),
                 lambda: _zip([(k, npy_bytes(v)) for k, v in items] + [(first, npy_bytes(items[0][1]))]))


def mutants(data: dict, fixture: str, arrays: dict[str, np.ndarray], raw: bytes,
            only: str | None = None) -> list[Mutant]:
    """Every mutant of one provenance contract (its YAML data) and its fixture (read once)."""
    out: list[Mutant] = []
    if only in (None, "artifact"):
        out.extend(fixture_mutants(fixture, arrays, raw, data["arrays"]))
    if only in (None, "contract"):
        out.extend(contract_mutants(data))
    return out

