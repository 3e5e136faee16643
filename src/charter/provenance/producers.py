"""Who may produce a fixture array: the registry, and the label checks that follow from it.

Note [Producer registry]: `charter fixtures capture` runs only producers registered here, so a
YAML file can never make charter call an arbitrary function. Each entry is keyed by the label's
(module, callable) and records the one provenance class it may produce, how many inputs it takes
(the label's `inputs`, passed positionally in that order; 0-d inputs reach an oracle or upstream
callable as Python scalars), whether it is random (then the label states a seed) and, for a
callable that returns a tuple, how many results it has (the label selects one as `name[i]`).

    upstream_capture        an external callable of the pinned package (gguf.quants.dequantize);
                            the entry only adapts argument types, the arithmetic is upstream's
    independent_crosscheck  a charter.oracles reference implementation
    contract_control        a generator in charter.provenance.controls (the rule as code)
    derived_metadata        no callable: `derived_from` is the producer (charter.provenance.derive)

`check_labels` is the offline half of verification shared by `verify` and `capture`: every label
names a producer of its own class, with exactly the producer fields that class uses.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from charter.diagnostics import Code, Diagnostic
from charter.provenance import derive
from charter.contract.contractset import ContractSet
from charter.contract.load import LoadedContract
from charter.contract.models import FixtureArray, ProvenanceClass, ProvenanceContract

UP, CROSS, CONTROL, DERIVED = (ProvenanceClass.UPSTREAM_CAPTURE, ProvenanceClass.INDEPENDENT_CROSSCHECK,
                               ProvenanceClass.CONTRACT_CONTROL, ProvenanceClass.DERIVED_METADATA)
ORACLES = "charter.oracles"
CONTROLS = "charter.provenance.controls"

Run = Callable[[tuple, "int | None", tuple], object]


@dataclass(frozen=True)
class Entry:
    cls: ProvenanceClass
    module: str
    callable: str
    arity: int
    run: Run
    seeded: bool = False
    outputs: int = 1


def _call(module: str, name: str, adapt: Callable[[tuple], tuple] | None = None) -> Run:
    """Run the callable itself, imported from its module at capture time."""

    def run(inputs: tuple, seed, shape):
        target = importlib.import_module(module)
        for part in name.split("."):
            target = getattr(target, part)
        args = tuple(a.item() if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in inputs)
        return target(*(adapt(args) if adapt else args))

    return run


def _gguf_qtype(args: tuple) -> tuple:
    from gguf.constants import GGMLQuantizationType

    blocks, qtype = args
    return blocks, GGMLQuantizationType(qtype)


def _control(name: str) -> Run:
    def run(inputs: tuple, seed, shape):
        from charter.provenance import controls

        return getattr(controls, name)(inputs, seed, shape)

    return run


def _regions_capture(inputs: tuple, seed, shape):
    """llama.cpp on the pinned SmolLM2 GGUF (charter.regions.capture: the adapter finds the file and
    arranges the calls; the logits are llama.cpp's)."""
    from charter.regions.capture import llama_eval

    return llama_eval(inputs, seed, shape)


def _regions_layers(inputs: tuple, seed, shape):
    """llama.cpp's per-layer residual stream through its eval callback (charter.regions.capture)."""
    from charter.regions.capture import llama_layers

    return llama_layers(inputs, seed, shape)


_ENTRIES = [
    Entry(UP, "gguf.quants", "dequantize", 2, _call("gguf.quants", "dequantize", _gguf_qtype)),
    Entry(CROSS, f"{ORACLES}.dequant", "dequantize_q8_0", 1, _call(f"{ORACLES}.dequant", "dequantize_q8_0")),
    Entry(CROSS, f"{ORACLES}.dequant", "dequantize_q4_1", 1, _call(f"{ORACLES}.dequant", "dequantize_q4_1")),
    Entry(CROSS, f"{ORACLES}.rmsnorm", "rmsnorm", 3, _call(f"{ORACLES}.rmsnorm", "rmsnorm")),
    Entry(CROSS, f"{ORACLES}.rmsnorm", "rmsnorm_zero_centred", 3,
          _call(f"{ORACLES}.rmsnorm", "rmsnorm_zero_centred")),
    Entry(CROSS, f"{ORACLES}.router", "router_topk", 2, _call(f"{ORACLES}.router", "router_topk"), outputs=2),
    Entry(CROSS, f"{ORACLES}.logits", "masked_argmax", 2, _call(f"{ORACLES}.logits", "masked_argmax")),
    Entry(CONTROL, CONTROLS, "uniform_pm1", 0, _control("uniform_pm1"), seeded=True),
    Entry(CONTROL, CONTROLS, "eps_1e_6", 0, _control("eps_1e_6")),
    Entry(CONTROL, CONTROLS, "router_tie_logits", 0, _control("router_tie_logits"), seeded=True),
    Entry(CONTROL, CONTROLS, "padded_argmax_winners", 2, _control("padded_argmax_winners"), seeded=True),
    Entry(CONTROL, CONTROLS, "smollm2_prompt_ids", 0, _control("smollm2_prompt_ids")),
    Entry(CONTROL, CONTROLS, "smollm2_prompt_lengths", 0, _control("smollm2_prompt_lengths")),
    Entry(UP, "llama_cpp", "Llama.eval", 2, _regions_capture, outputs=3),
    Entry(CONTROL, CONTROLS, "smollm2_layer_sequences", 0, _control("smollm2_layer_sequences")),
    Entry(UP, "llama_cpp", "ggml_backend_sched_eval_callback", 3, _regions_layers),
]
REGISTRY: dict[tuple[str, str], Entry] = {(e.module, e.callable): e for e in _ENTRIES}

# Producer fields each class uses; any other field on a label is a claim it cannot make.
FIELDS: dict[ProvenanceClass, frozenset[str]] = {
    UP: frozenset({"package", "version", "module", "callable"}),
    CROSS: frozenset({"module", "callable"}),
    CONTROL: frozenset({"module", "callable", "rule", "seed"}),
    DERIVED: frozenset({"derived_from"}),
}
_SELECTOR = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\[(?P<index>0|[1-9][0-9]*)\])?")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class Ref:
    """A label's producer as (module, attribute path, result index)."""

    module: str
    name: str
    index: int | None

    @property
    def text(self) -> str:
        return f"{self.module}.{self.name}" + (f"[{self.index}]" if self.index is not None else "")


class LabelError(Exception):
    def __init__(self, code: Code, path: tuple, message: str) -> None:
        super().__init__(message)
        self.code, self.path, self.message = code, path, message


def producer_ref(label: FixtureArray) -> Ref:
    """The (module, name, index) a label names; `callable` alone may be a dotted path."""
    p = label.producer
    m = _SELECTOR.fullmatch(p.callable or "")
    if m is None:
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "callable"),
                         f"callable {p.callable!r} must be a dotted name, optionally with a result index `name[i]`")
    name, index = m["name"], (int(m["index"]) if m["index"] is not None else None)
    if p.module is not None:
        if not _MODULE.fullmatch(p.module):
            raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "module"), f"module {p.module!r} is not a module name")
        return Ref(p.module, name, index)
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if _importable(module):
            return Ref(module, ".".join(parts[cut:]), index)
    raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "callable"),
                     f"no importable module in {name!r}; name the module under producer.module")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except Exception:  # noqa: BLE001 - a parent package that fails to import: not importable
        return False


def _resolve(ref: Ref, field: str = "callable") -> object:
    try:
        target = importlib.import_module(ref.module)
    except Exception as exc:  # noqa: BLE001 - whatever the import raises, the producer does not resolve
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "module" if field == "module" else "callable"),
                         f"module {ref.module} cannot be imported: {exc}") from None
    for part in ref.name.split("."):
        if not hasattr(target, part):
            raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "callable"),
                             f"{ref.module} has no attribute {ref.name!r}")
        target = getattr(target, part)
    if not callable(target):
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "callable"), f"{ref.module}.{ref.name} is not callable")
    return target


def _in_charter(module: str) -> bool:
    return module == "charter" or module.startswith("charter.")


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@functools.lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    """Top-level import name -> distributions that install it (scans site-packages once)."""
    return importlib.metadata.packages_distributions()


def _norm(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def entry_for(label: FixtureArray) -> tuple[Entry, Ref]:
    """The registered producer of a callable-produced label, checked against its class."""
    ref = producer_ref(label)
    entry = REGISTRY.get((ref.module, ref.name))
    if entry is None:
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "callable"),
                         f"{ref.module}.{ref.name} is not a registered producer, so capture cannot reproduce "
                         "this array (charter.provenance.producers.REGISTRY)")
    if entry.cls is not label.cls:
        raise LabelError(Code.FIXTURE_CLASS, ("class",),
                         f"{ref.module}.{ref.name} produces {entry.cls.value} arrays, not {label.cls.value}")
    if entry.outputs > 1 and ref.index is None:
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "callable"),
                         f"{ref.name} returns {entry.outputs} results; select one as {ref.name}[i]")
    if ref.index is not None and ref.index >= entry.outputs:
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "callable"),
                         f"{ref.name} returns {entry.outputs} result(s); index {ref.index} does not exist")
    return entry, ref


# --- the checks ---------------------------------------------------------------------------------


def _fields(label: FixtureArray) -> None:
    p = label.producer
    allowed = FIELDS[label.cls]
    for name in ("package", "version", "module", "callable", "rule", "seed", "derived_from"):
        if getattr(p, name) is not None and name not in allowed:
            raise LabelError(Code.FIXTURE_CLASS, ("producer", name),
                             f"{_article(label.cls.value)} {label.cls.value} producer has no {name}: "
                             "the field claims a provenance this class does not have")
    if label.checks is not None and label.cls is not CROSS:
        raise LabelError(Code.FIXTURE_CLASS, ("checks",), "only an independent_crosscheck checks an implementation")


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _upstream(label: FixtureArray, capture: bool = False) -> None:
    p = label.producer
    ref = producer_ref(label)
    if _in_charter(ref.module):
        raise LabelError(Code.FIXTURE_CLASS, ("producer", "module" if p.module else "callable"),
                         f"an upstream_capture is emitted by pinned external code; {ref.module} is part of charter")
    try:
        installed = importlib.metadata.version(p.package)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        if not capture and opt_in_pin(p.package, p.version):
            entry_for(label)  # Note [Opt-in upstream packages]
            return
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "package"),
                         f"package {p.package} is not installed (pin: {p.package}=={p.version})") from None
    if installed != p.version:
        raise LabelError(Code.FIXTURE_VERSION, ("producer", "version"),
                         f"pinned {p.package}=={p.version}, installed {installed}")
    top = ref.module.split(".")[0]
    owners = {_norm(d) for d in _distributions().get(top, [])}
    if _norm(p.package) not in owners:
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer", "module" if p.module else "callable"),
                         f"module {ref.module} is not part of the package {p.package}")
    _resolve(ref, "module" if p.module else "callable")
    entry_for(label)


# Note [Opt-in upstream packages]: an upstream producer too heavy for the test extra (llama.cpp
# through llama-cpp-python) is pinned in charter's own opt-in extra `capture` instead. Without it
# installed, `verify` still checks everything it can offline (the label's class and fields, the
# registered producer, the arrays' dtype, shape and digest) and skips what needs the package (its
# installed version, the module's distribution, the callable); `capture` refuses, as for any
# missing package. The pin must be exactly the extra's, so a label cannot name a version the extra
# does not install.
OPT_IN_EXTRA = "capture"


@functools.lru_cache(maxsize=None)
def _opt_in_pins() -> frozenset[tuple[str, str]]:
    try:
        requires = importlib.metadata.requires("charter") or []
    except importlib.metadata.PackageNotFoundError:
        return frozenset()
    pins = set()
    for req in requires:
        spec, _, marker = req.partition(";")
        m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([0-9][0-9A-Za-z.+-]*)\s*", spec)
        if m and re.search(r"extra\s*==\s*[\"']" + OPT_IN_EXTRA + r"[\"']", marker):
            pins.add((_norm(m[1]), m[2]))
    return frozenset(pins)


def opt_in_pin(package: str, version: str) -> bool:
    """`package==version` is pinned by charter's opt-in extra `capture` (Note [Opt-in upstream packages])."""
    return (_norm(package), version) in _opt_in_pins()


def _crosscheck(label: FixtureArray) -> None:
    ref = producer_ref(label)
    if not _within(ref.module, ORACLES):
        raise LabelError(Code.FIXTURE_CLASS, ("producer", "module"),
                         f"an independent_crosscheck is computed by a reference implementation in {ORACLES}, "
                         f"not {ref.module}")
    checked = label.checks.rsplit(".", 1)[0] if "." in label.checks else label.checks
    if _within(ref.module, checked) or _within(checked, ref.module):
        raise LabelError(Code.FIXTURE_SHARED, ("checks",),
                         f"cross-check module {ref.module} shares a module with {label.checks}")
    _resolve(ref, "module")
    via = _imports_module(ref.module, checked)
    if via:
        raise LabelError(Code.FIXTURE_SHARED, ("checks",),
                         f"cross-check module {ref.module} imports {via}, part of the implementation it checks "
                         f"({label.checks})")
    entry_for(label)


def _control(label: FixtureArray) -> None:
    p = label.producer
    if p.module is None or p.callable is None:
        raise LabelError(Code.FIXTURE_PRODUCER, ("producer",),
                         "a contract_control names the generator of its rule (module and callable)")
    _resolve(producer_ref(label), "module")
    entry, _ = entry_for(label)
    if entry.seeded and p.seed is None:
        raise LabelError(Code.FIXTURE_SEED, ("producer",), f"{p.callable} is random: state the seed")
    if not entry.seeded and p.seed is not None:
        raise LabelError(Code.FIXTURE_SEED, ("producer", "seed"), f"{p.callable} is not random: a seed claims nothing")
    if p.seed is not None and not 0 <= p.seed < 2**64:
        raise LabelError(Code.FIXTURE_SEED, ("producer", "seed"), f"seed must be in [0, 2**64), got {p.seed}")


def _derived(label: FixtureArray, cs: ContractSet, stored: np.ndarray | None) -> None:
    if label.inputs:
        raise LabelError(Code.FIXTURE_INPUT, ("inputs",), "a derived_metadata array is computed from its "
                         "derived_from source, not from other arrays of the fixture")
    try:
        derive.check(label.producer.derived_from, cs, label.dtype, stored)
    except derive.SourceError as exc:
        raise LabelError(Code.FIXTURE_SOURCE, ("producer", "derived_from"), str(exc)) from None


def _arity(label: FixtureArray) -> None:
    if label.cls is DERIVED:
        return
    entry, _ = entry_for(label)
    if len(label.inputs) != entry.arity:
        raise LabelError(Code.FIXTURE_INPUT, ("inputs",),
                         f"{entry.module}.{entry.callable} takes {entry.arity} input(s), the label lists {len(label.inputs)}")


def _cycles(contract: ProvenanceContract) -> set[str]:
    """Names of arrays that are (transitively) their own input."""
    inputs = {a.name: a.inputs for a in contract.arrays}
    bad: set[str] = set()
    for start in inputs:
        stack, seen = list(inputs[start]), set()
        while stack:
            n = stack.pop()
            if n == start:
                bad.add(start)
                break
            if n in seen or n not in inputs:
                continue
            seen.add(n)
            stack.extend(inputs[n])
    return bad


def check_labels(loaded: LoadedContract, cs: ContractSet,
                 stored: dict[str, np.ndarray] | None = None, *, capture: bool = False) -> list[Diagnostic]:
    """Every label names a producer of its own class (Note [Producer registry]); one diagnostic
    per array at most, the first rule it breaks."""
    contract = loaded.contract
    assert isinstance(contract, ProvenanceContract)
    out: list[Diagnostic] = []
    cyclic = _cycles(contract)
    for i, label in enumerate(contract.arrays):
        try:
            _fields(label)
            if label.cls is UP:
                _upstream(label, capture)
            elif label.cls is CROSS:
                _crosscheck(label)
            elif label.cls is CONTROL:
                _control(label)
            else:
                _derived(label, cs, (stored or {}).get(label.name))
            _arity(label)
            if label.name in cyclic:
                raise LabelError(Code.FIXTURE_INPUT, ("inputs",), f"array {label.name} is computed from itself")
        except LabelError as exc:
            out.append(Diagnostic(exc.code, field_of(label, exc.path), exc.message,
                                  location=loaded.doc.where(("arrays", i, *exc.path))))
    return out


def field_of(label: FixtureArray, path: tuple) -> str:
    return ".".join([label.name, *map(str, path)])


def topological(contract: ProvenanceContract) -> list[FixtureArray]:
    """Arrays in an order where every input comes before its users (spec order otherwise)."""
    done: dict[str, FixtureArray] = {}
    by_name = {a.name: a for a in contract.arrays}
    pending = list(contract.arrays)
    while pending:
        ready = [a for a in pending if all(n in done for n in a.inputs)]
        if not ready:
            raise ValueError("inputs form a cycle")
        for a in ready:
            done[a.name] = by_name[a.name]
        pending = [a for a in pending if a.name not in done]
    return list(done.values())


# --- independence: what an oracle module imports ------------------------------------------------


def _imports_module(module: str, target: str) -> str | None:
    """The first module `module` imports (following imports inside charter.oracles) that is
    `target` or inside it; None if there is none."""
    seen: set[str] = set()
    stack = [module]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for imported in _imports_of(current):
            if _within(imported, target):
                return imported
            if _within(imported, ORACLES):
                stack.append(imported)
    return None


def _imports_of(module: str) -> list[str]:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return []
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            out.append(base)
            out.extend(f"{base}.{alias.name}" for alias in node.names)
    return out
