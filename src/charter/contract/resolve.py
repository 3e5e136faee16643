"""Contracts -> plans: evaluate expressions over model constants, check invariants and C types.

Every error is located at the contract text that caused it. Resolution collects all errors of a
contract it can find independently (one per fact) rather than stopping at the first.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import operator
import re

from charter.diagnostics import CharterError, Code, Diagnostic, Location
from charter.formats.ggml_types import GGML_TYPES_BY_NAME
from charter.formats.safetensors import DTYPE_BITS
from charter.formats.values import INTEGER_ELEMENTS, VALUE_FIELDS
from charter.floatbits import f32_bits, f32_from_bits, float_from_bits
from charter.language import expand
from charter.memo import IdMemo, changed_at
from charter.contract import braces, expr
from charter.contract.load import LoadedContract
from charter.contract.models import IDENTITY_PLACEHOLDERS, ArtifactContract, KernelContract, MetaFact, ModelContract, Status
from charter.contract.plan import (
    ArtifactPlan,
    BoundRule,
    CodecCheck,
    Component,
    ExclusionCheck,
    HeadRow,
    KeyAt,
    LayoutPlan,
    Located,
    MetaCheck,
    ModelPlan,
    PayloadPlan,
    PinnedSource,
    SpecialIdCheck,
    StoreField,
    StorePlan,
    TensorCheck,
    TensorDigest,
    TensorRow,
    TokenizerPlan,
    ValueRule,
)
from charter.contract.yamlload import DroppedItem, dotted
from charter.formats.stores import expertmajor, ple

MAX_EXPANDED_TENSORS = 1_000_000
MAX_LAYERS = 100_000
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Collector:
    """Gathers diagnostics so one run reports every independent error of a contract."""

    def __init__(self, loaded: LoadedContract) -> None:
        self.loaded = loaded
        self.diagnostics: list[Diagnostic] = []

    def at(self, *path: str | int) -> Location:
        return self.loaded.doc.where(path)

    def attempt(self, fn, *args, default=None):
        try:
            return fn(*args)
        except CharterError as exc:
            self.diagnostics.extend(exc.diagnostics)
            return default

    def error(self, code: Code, path: tuple, message: str) -> None:
        self.diagnostics.append(Diagnostic(code, dotted(path), message, location=self.at(*path)))

    def finish(self) -> None:
        if self.diagnostics:
            raise CharterError(self.diagnostics)


def _value(c: _Collector, raw, env: dict, path: tuple, ctype: str | None = None):
    """A literal or an expression, evaluated and (when a C type is declared) range-checked."""
    loc = c.at(*path)
    field = dotted(path)
    if isinstance(raw, str):
        value = _parsed(raw, loc, field).evaluate(env)
    else:
        value = raw
    if ctype is not None:
        expr.check_ctype(value, ctype, loc, field)
    return value


@functools.lru_cache(maxsize=1 << 16)
def _parsed(text: str, loc: Location, field: str) -> expr.Expr:
    """`expr.parse`, once per text and place: an Expr is immutable, and a mutation battery resolves
    thousands of variants of one contract (a refusal is not kept: it is raised again)."""
    return expr.parse(text, loc, field)


def _int(c: _Collector, raw, env: dict, path: tuple, ctype: str = "int64"):
    return c.attempt(_value, c, raw, env, path, ctype)


# --- model ------------------------------------------------------------------------------------


def resolve_model(loaded: LoadedContract) -> ModelPlan:
    m = loaded.contract
    assert isinstance(m, ModelContract)
    c = _Collector(loaded)
    base = dict(m.constants)
    locations = {name: c.at("constants", name) for name in m.constants}
    for name, value in base.items():
        if isinstance(value, float):
            c.attempt(expr.check_ctype, value, "float64", locations[name], f"constants.{name}")
    definitions = {}
    for name, text in m.derived.items():
        locations[name] = c.at("derived", name)
        parsed = c.attempt(expr.parse, text, locations[name], f"derived.{name}")
        if parsed is not None:
            definitions[name] = parsed
    env = c.attempt(expr.resolve, definitions, base, default=None)
    if env is None:
        c.finish()
    for i, text in enumerate(m.invariants):
        parsed = c.attempt(expr.parse, text, c.at("invariants", i), f"invariants[{i}]")
        if parsed is not None:
            c.attempt(expr.check_invariant, parsed, env, f"invariants[{i}]")
    layer_kinds: tuple[str, ...] = ()
    if m.layer_pattern is not None:
        repeat = _int(c, m.layer_pattern.repeat, env, ("layer_pattern", "repeat"), "uint32")
        if repeat is not None and repeat * len(m.layer_pattern.period) > MAX_LAYERS:
            c.error(Code.SPEC_INVALID, ("layer_pattern", "repeat"),
                    f"the pattern spans {repeat * len(m.layer_pattern.period)} layers (limit {MAX_LAYERS})")
        elif repeat is not None:
            layer_kinds = tuple(m.layer_pattern.period) * repeat
            if "layers" in env and len(layer_kinds) != env["layers"]:
                c.error(Code.INVARIANT_FALSE, ("layer_pattern",),
                        f"the layer pattern covers {len(layer_kinds)} layers, but layers = {env['layers']}")
    plan_kw: dict = {}
    if m.tokenizer is not None:
        plan_kw = _resolve_tokenizer_facts(c, m, env)
        locations["tokenizer.ids"] = c.at("tokenizer", "ids")
        locations["tokenizer.logits_rows"] = c.at("tokenizer", "logits_rows")
    c.finish()
    return ModelPlan(m.id, m.status.value, m.architecture, m.family, env, locations,
                     layer_kinds=layer_kinds, **plan_kw)


def _resolve_tokenizer_facts(c: _Collector, m: ModelContract, env: dict) -> dict:
    t = m.tokenizer
    ids = _int(c, t.ids, env, ("tokenizer", "ids"), "uint32")
    rows = _int(c, t.logits_rows, env, ("tokenizer", "logits_rows"), "uint32")
    if ids is not None and rows is not None and rows < ids:
        c.error(Code.INVARIANT_FALSE, ("tokenizer", "logits_rows"),
                f"logits_rows >= ids is false: {rows} >= {ids} (padded logits can only add rows)")
    special = {}
    for name, raw in t.special.items():
        value = _int(c, raw, env, ("tokenizer", "special", name), "uint32")
        if value is not None:
            special[name] = value
            if ids is not None and value >= ids:
                c.error(Code.INVARIANT_FALSE, ("tokenizer", "special", name),
                        f"special id {name} = {value} is outside the tokenizer domain [0, {ids})")
    stops = []
    for key in ("stop_ids", "non_stop_ids"):
        out = []
        for i, raw in enumerate(getattr(t, key)):
            value = _int(c, raw, env, ("tokenizer", key, i), "uint32")
            if value is None:
                continue
            if ids is not None and value >= ids:
                c.error(Code.INVARIANT_FALSE, ("tokenizer", key, i),
                        f"{key} entry {value} is outside the tokenizer domain [0, {ids})")
            if value in out:
                c.error(Code.SPEC_INVALID, ("tokenizer", key, i), f"{key} lists {value} twice")
            out.append(value)
        stops.append(tuple(out))
    both = sorted(set(stops[0]) & set(stops[1]))
    if both:
        c.error(Code.SPEC_INVALID, ("tokenizer", "non_stop_ids"), f"ids both stop and non-stop: {both}")
    return dict(tokenizer_ids=ids, logits_rows=rows, special_ids=special, stop_ids=stops[0], non_stop_ids=stops[1])


# --- artifact ---------------------------------------------------------------------------------


def resolve_artifact(loaded: LoadedContract, model: ModelPlan, memo: dict | None = None) -> ArtifactPlan:
    """`memo`: a dict the caller keeps across resolutions of variants of one contract (the mutation
    battery's), where each tensor row's evaluated dims and names are kept (_expand_tensors)."""
    a = loaded.contract
    assert isinstance(a, ArtifactContract)
    c = _Collector(loaded)
    env = _profile_env(c, a, model)
    identity = tuple(
        MetaCheck(key, "string", "identity", c.at("identity", key), value=_identity_value(value, model))
        for key, value in a.identity.items()
    )
    if Status(a.status).rank > Status(model.status).rank:
        c.error(Code.SPEC_INVALID, ("status",),
                f"status {a.status.value} claims more than its model {model.id} ({model.status})")
    metadata = tuple(_meta(c, key, fact, env, ("metadata", "keys", key), "metadata") for key, fact in a.metadata.keys.items())
    tokenizer = None
    tok_checks: tuple[MetaCheck, ...] = ()
    if a.tokenizer is not None:
        tok_checks = tuple(
            _meta(c, key, fact, env, ("tokenizer", "keys", key), "tokenizer") for key, fact in a.tokenizer.keys.items()
        )
        tokenizer = _tokenizer_plan(c, a, model)
    config: tuple[MetaCheck, ...] = ()
    if a.config is not None:
        config = tuple(_config_fact(c, key, fact, env) for key, fact in a.config.keys.items())
    version = a.container.version
    alignment = _int(c, a.container.alignment, env, ("container", "alignment"), "uint32") if a.container.alignment is not None else None
    if alignment is not None and (alignment <= 0 or alignment & (alignment - 1)):
        c.error(Code.SPEC_INVALID, ("container", "alignment"), f"alignment {alignment} is not a power of two")
    if a.format == "gguf" and a.container.header_aligned is not None:
        c.error(Code.SPEC_INVALID, ("container", "header_aligned"), "header_aligned applies to safetensors only")
    if a.format == "safetensors" and (version is not None or alignment is not None):
        c.error(Code.SPEC_INVALID, ("container",), "version and alignment apply to GGUF only")
    tensors, tensor_rows = _expand_tensors(c, a, env, model, memo)
    stores = tuple(_store(c, name, store, env, tensors) for name, store in a.stores.items())
    if tokenizer is not None and tokenizer.logits_tensor is not None:
        logits = next((t for t in tensors if t.name == tokenizer.logits_tensor), None)
        if logits is None:
            c.error(Code.REF_DANGLING, ("tokenizer", "logits", "tensor"),
                    f"logits tensor {tokenizer.logits_tensor!r} is not one of the contract's tensors")
        elif tokenizer.logits_axis >= len(logits.shape):
            c.error(Code.SPEC_INVALID, ("tokenizer", "logits", "axis"),
                    f"axis {tokenizer.logits_axis} does not exist: {logits.name} has rank {len(logits.shape)}")
    codecs = tuple(
        CodecCheck(name, _int(c, f.block, env, ("codecs", name, "block"), "uint32") or 0,
                   _int(c, f.bytes, env, ("codecs", name, "bytes"), "uint32") or 0,
                   _int(c, f.header, env, ("codecs", name, "header"), "uint32") or 0, c.at("codecs", name))
        for name, f in a.codecs.items()
    )
    for codec in codecs:
        if codec.block <= 0 or codec.bytes <= 0:
            c.error(Code.SPEC_INVALID, ("codecs", codec.name), "block and bytes must be positive")
    exclusions = tuple(
        ExclusionCheck(e.name, _int(c, e.source_count, env, ("exclusions", i, "source_count"), "uint32") or 0,
                       tuple(e.patterns), e.reason, c.at("exclusions", i), e.count_key)
        for i, e in enumerate(a.exclusions)
    )
    pinned = set(a.metadata.keys) | set(a.identity) | set(a.tokenizer.keys if a.tokenizer else ())
    for i, e in enumerate(a.exclusions):
        if e.count_key is not None and e.count_key not in pinned:
            c.error(Code.REF_DANGLING, ("exclusions", i, "count_key"),
                    f"count_key {e.count_key!r} must be a key the contract pins")
    layout = a.layout.model_dump()
    payload = a.payload
    values = _value_rules(c, a, tensors)
    bounds = _value_bounds(c, a, env, tensors)
    c.finish()
    return ArtifactPlan(
        id=a.id, status_fact=Located(a.status.value, c.at("status")), model=a.model, format=a.format,
        spec_path=loaded.doc.file, spec_sha256=_source_sha256(loaded.doc.source),
        version=_located(c, version, "container", "version"),
        alignment=_located(c, alignment, "container", "alignment"),
        header_aligned=_located(c, a.container.header_aligned, "container", "header_aligned"),
        identity=identity, metadata=metadata + tok_checks,
        extra_keys=Located(a.metadata.extra_keys, c.at("metadata", "extra_keys")),
        forbidden=tuple(KeyAt(k, c.at("metadata", "forbidden", i)) for i, k in enumerate(a.metadata.forbidden)),
        tokenizer=tokenizer, config_file=Located(a.config.file, c.at("config", "file")) if a.config else None,
        config=config, tensors=tensors, tensor_rows=Located(tensor_rows, c.at("tensors")), codecs=codecs,
        stores=tuple(x for x in stores if x is not None),
        layout=LayoutPlan(**{k: Located(v, c.at("layout", k)) for k, v in layout.items()}, at=c.at("layout")),
        exclusions=exclusions,
        payload=PayloadPlan(payload.file_sha256, tuple(TensorDigest(n, d, c.at("payload", "tensors", n))
                                                      for n, d in payload.tensors.items()), c.at("payload"))
        if payload else None,
        source=PinnedSource(a.source.package, a.source.path, a.source.sha256, a.source.size) if a.source else None,
        values=values, bounds=bounds,
    )


# A contract text's digest, once per text object: a battery's contract mutants resolve documents
# that keep the contract's own text (Note [Identity memo] in charter.memo).
_source_sha256 = IdMemo(lambda source: hashlib.sha256(source.encode("utf-8")).hexdigest(), bound=8)


def _value_rules(c: _Collector, a: ArtifactContract, tensors: tuple[TensorCheck, ...]) -> tuple[ValueRule, ...]:
    """The value policy as ordered rules (exceptions, `finite` patterns, the default). Every pattern
    must name a tensor of the contract (a typo would silently check nothing, or everything), a
    tensor is either excepted or selected, and every tensor a rule checks has a codec with a
    value rule (Note [Value rules] in charter.formats.values)."""
    policy = a.values
    if policy is None:
        return ()
    rules = [ValueRule(name, tuple(e.tensors), False, c.at("values", "exceptions", name))
             for name, e in policy.exceptions.items()]
    rules += [ValueRule("finite", (p,), True, c.at("values", "finite", i)) for i, p in enumerate(policy.finite)]
    rules.append(ValueRule("default", ("*",), policy.default == "finite", c.at("values", "default")))
    names = [t.name for t in tensors]
    for name, e in policy.exceptions.items():
        for i, pattern in enumerate(e.tensors):
            if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
                c.error(Code.SPEC_INVALID, ("values", "exceptions", name, "tensors", i),
                        f"pattern {pattern!r} matches no tensor of the contract")
    for i, pattern in enumerate(policy.finite):
        if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            c.error(Code.SPEC_INVALID, ("values", "finite", i), f"pattern {pattern!r} matches no tensor of the contract")
    fields = VALUE_FIELDS[a.format]
    refused: set[str] = set()
    patterns = tuple(r.patterns for r in rules)
    for t in tensors:
        matching = [rules[k] for k in _matching(t.name, patterns)]
        first = matching[0]
        if not first.check and any(r.name == "finite" for r in matching):
            c.error(Code.SPEC_INVALID, ("values", "exceptions", first.name),
                    f"tensor {t.name!r} is both excepted ({first.name}) and listed under values.finite")
        elif first.check and t.codec not in fields and t.codec not in refused:
            refused.add(t.codec)
            where = ("values", "finite", policy.finite.index(first.patterns[0])) if first.name == "finite" \
                else ("values", "default")
            c.error(Code.SPEC_INVALID, where,
                    f"tensor {t.name!r} is {t.codec}, a codec without a value rule; except it under "
                    f"values.exceptions. Codecs with a value rule: {', '.join(fields)}")
    return tuple(rules)


@functools.lru_cache(maxsize=1 << 16)
def _matching(name: str, patterns: tuple[tuple[str, ...], ...]) -> tuple[int, ...]:
    """The indices of the pattern lists that match `name`: a battery resolves one policy per
    mutant over the same names."""
    return tuple(k for k, ps in enumerate(patterns) if any(fnmatch.fnmatchcase(name, p) for p in ps))


def _value_bounds(c: _Collector, a: ArtifactContract, env: dict, tensors: tuple[TensorCheck, ...]
                  ) -> tuple[BoundRule, ...]:
    """The value policy's bounds (Note [Value bounds] in charter.formats.values). Every pattern
    names a tensor, every tensor named has an integer codec (a float's or a block's bytes are not
    integers), each side fits the codec of every tensor it bounds, min <= max, and a tensor has at
    most one bound and is not also excepted."""
    policy = a.values
    if policy is None or not policy.bounds:
        return ()
    integers = INTEGER_ELEMENTS[a.format]
    excepted = {n: name for name, e in policy.exceptions.items() for p in e.tensors
                for n in (t.name for t in tensors) if fnmatch.fnmatchcase(n, p)}
    bounded: dict[str, str] = {}
    out = []
    for name, b in policy.bounds.items():
        where = ("values", "bounds", name)
        matched: list[TensorCheck] = []
        for i, pattern in enumerate(b.tensors):
            hits = [t for t in tensors if fnmatch.fnmatchcase(t.name, pattern)]
            if not hits:
                c.error(Code.SPEC_INVALID, (*where, "tensors", i), f"pattern {pattern!r} matches no tensor of the contract")
            floats = [t for t in hits if t.codec not in integers]
            if floats:  # once per pattern: `*` over a model of floats is one mistake, not thousands
                more = f" (and {len(floats) - 1} more)" if len(floats) > 1 else ""
                c.error(Code.SPEC_INVALID, (*where, "tensors", i),
                        f"tensor {floats[0].name!r}{more} is {floats[0].codec}: bounds apply to integer tensors "
                        f"({', '.join(integers)})")
                continue
            for t in hits:
                if t.name in bounded and bounded[t.name] != name:
                    c.error(Code.SPEC_INVALID, (*where, "tensors", i),
                            f"tensor {t.name!r} is bounded twice ({bounded[t.name]} and {name})")
                elif t.name in excepted:
                    c.error(Code.SPEC_INVALID, (*where, "tensors", i),
                            f"tensor {t.name!r} is both excepted ({excepted[t.name]}) and bounded ({name})")
                elif t.name not in bounded:
                    bounded[t.name] = name
                    matched.append(t)
        sides = {}
        for side in ("min", "max"):
            raw = getattr(b, side)
            if raw is None:
                sides[side] = None
                continue
            value = c.attempt(_value, c, raw, env, (*where, side))
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                c.error(Code.EXPR_TYPE, (*where, side), f"{side} is {value!r}, not an integer")
                value = None
            for t in matched if value is not None else ():
                element = integers[t.codec]
                if not element.lo <= value <= element.hi:
                    c.error(Code.EXPR_RANGE, (*where, side), f"{side} {value} does not fit {t.codec} "
                                                             f"({element.lo}..{element.hi}), the codec of {t.name!r}")
                    break
            sides[side] = value
        if sides["min"] is not None and sides["max"] is not None and sides["min"] > sides["max"]:
            c.error(Code.SPEC_INVALID, (*where, "min"), f"min {sides['min']} is greater than max {sides['max']}: "
                                                        "no element could be admitted")
        out.append(BoundRule(name, tuple(b.tensors), sides["min"], sides["max"],
                             c.at(*where, "min") if b.min is not None else None,
                             c.at(*where, "max") if b.max is not None else None))
    return tuple(out)


def _located(c: _Collector, value, *path) -> Located | None:
    """`value` with the location of `path`, or None for a fact the contract does not state."""
    return _fact(value, c.at(*path))


def _fact(value, at: Location | None) -> Located | None:
    """`value` located at `at`, or None for a fact no contract states."""
    return None if value is None else Located(value, at)


def _identity_value(value: str, model: ModelPlan) -> str:
    """Identity values may name the model's own identity: `{model.architecture}`, `{model.family}`
    (one source of truth: the artifact cannot drift from the model it claims to be). Substituted in
    one pass, so a model's own text is never read as a placeholder (Note [Brace escapes])."""
    return "".join(getattr(model, IDENTITY_PLACEHOLDERS[text]) if kind == "placeholder" else text
                   for kind, text in braces.parts(value))


def _meta(c: _Collector, key: str, fact: MetaFact, env: dict, path: tuple, stage: str) -> MetaCheck:
    loc = c.at(*path)
    value = fact.value
    if fact.bits is not None:  # exact, whatever YAML can write (Note [Float bits])
        value = float_from_bits(fact.type, int(fact.bits, 16))
    elif fact.type not in ("string", "bool", "array") and value is not None:
        value = c.attempt(_value, c, value, env, path + ("value",), fact.type)
        if fact.type == "float32" and value is not None:
            value = f32_from_bits(f32_bits(value))  # the value the file can hold
        elif fact.type == "float64" and value is not None:
            value = float(value)
    length = None
    if fact.length is not None:
        length = _int(c, fact.length, env, path + ("length",), "uint64")
    values = None
    if fact.values is not None:
        values = tuple(_as_element(v, fact.element) for v in fact.values)
        for i, v in enumerate(values):
            c.attempt(_check_element, v, fact.element, c.at(*path, "values", i), dotted(path + ("values", i)))
        if length is not None and len(values) != length:
            c.error(Code.SPEC_INVALID, path + ("values",), f"{len(values)} values listed but length is {length}")
    return MetaCheck(key, fact.type, stage, loc, value=value, element=fact.element, length=length,
                     values=values, sha256=fact.sha256)


def _config_fact(c: _Collector, key: str, fact, env: dict) -> MetaCheck:
    path = ("config", "keys", key)
    value = fact.value
    if fact.type in ("int64", "float64"):
        value = c.attempt(_value, c, value, env, path + ("value",), fact.type)
        if fact.type == "float64" and value is not None:
            value = float(value)
    return MetaCheck(key, fact.type, "metadata", c.at(*path), value=value)


def _as_element(value, element: str | None):
    """An element as the file holds it: floats rounded to their width (an int literal becomes a float)."""
    if element == "float32" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f32_from_bits(f32_bits(float(value)))
    if element == "float64" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def _check_element(value, element: str, loc: Location, field: str) -> None:
    if element == "string":
        if not isinstance(value, str):
            raise CharterError([Diagnostic(Code.EXPR_TYPE, field, f"expected a string element, got {value!r}", location=loc)])
        return
    if element == "bool":
        if not isinstance(value, bool):
            raise CharterError([Diagnostic(Code.EXPR_TYPE, field, f"expected a bool element, got {value!r}", location=loc)])
        return
    if isinstance(value, str):
        raise CharterError([Diagnostic(Code.EXPR_TYPE, field, f"array elements are literals, got {value!r}", location=loc)])
    expr.check_ctype(value, element, loc, field)


def _tokenizer_plan(c: _Collector, a: ArtifactContract, model: ModelPlan) -> TokenizerPlan:
    t = a.tokenizer
    if (t.tokens or t.logits or t.special or t.stop) and model.tokenizer_ids is None:
        c.error(Code.REF_DANGLING, ("tokenizer",), f"model {model.id} states no tokenizer facts to bind to")
    special = []
    for key, name in t.special.items():
        if name not in model.special_ids:
            c.error(Code.REF_DANGLING, ("tokenizer", "special", key),
                    f"model {model.id} has no special id named {name!r} (known: {sorted(model.special_ids)})")
            continue
        special.append(SpecialIdCheck(key, name, model.special_ids[name], c.at("tokenizer", "special", key)))
    return TokenizerPlan(
        tokens_key=t.tokens, ids=_fact(model.tokenizer_ids, model.locations.get("tokenizer.ids")),
        logits_tensor=t.logits.tensor if t.logits else None, logits_axis=t.logits.axis if t.logits else None,
        logits_rows=_fact(model.logits_rows, c.at("tokenizer", "logits") if t.logits else None),
        special=tuple(special),
        stop_keys=tuple(KeyAt(k, c.at("tokenizer", "stop", i)) for i, k in enumerate(t.stop)),
        stop_ids=model.stop_ids,
    )


def _profile_env(c: _Collector, a: ArtifactContract, model: ModelPlan) -> dict:
    """Model constants plus the profile's own (codec and page choices); a profile never shadows the model."""
    env = dict(model.constants)
    for name, value in a.profile.constants.items():
        if name in env:
            c.error(Code.SPEC_INVALID, ("profile", "constants", name), f"{name!r} is already a constant of {model.id}")
        env[name] = value
    definitions = {}
    for name, text in a.profile.derived.items():
        if name in env:
            c.error(Code.SPEC_INVALID, ("profile", "derived", name), f"{name!r} is already a constant of {model.id}")
        parsed = c.attempt(expr.parse, text, c.at("profile", "derived", name), f"profile.derived.{name}")
        if parsed is not None:
            definitions[name] = parsed
    resolved = c.attempt(expr.resolve, definitions, env, default=None)
    return resolved if resolved is not None else env


# The codec names of each container: what its reader can report for a tensor, so what a contract
# may pin (the mutation battery and charter.conforming build files from them).
CODEC_NAMES: dict[str, tuple[str, ...]] = {
    "gguf": tuple(GGML_TYPES_BY_NAME),
    "safetensors": tuple(DTYPE_BITS),
}
_CODEC_KIND = {"gguf": ("a ggml type name", "GGUF codecs are ggml type names"),
               "safetensors": ("a safetensors dtype", "safetensors codecs are its dtypes")}


def _check_codec_name(c: _Collector, fmt: str, codec: str, path: tuple) -> None:
    """A codec no file of this format can state would only ever be rejected: refuse it where it
    is written, with the valid names and the nearest one."""
    names = CODEC_NAMES[fmt]
    if codec in names:
        return
    near = [n for n in names if n.lower() == codec.lower()] or expr.nearest_names(codec, list(names), n=1)
    hint = f" (did you mean {near[0]}?)" if near else ""
    what, valid = _CODEC_KIND[fmt]
    c.error(Code.SPEC_INVALID, path, f"{codec!r} is not {what}{hint}; {valid}: {', '.join(names)}")


def _expand_tensors(c: _Collector, a: ArtifactContract, env: dict, model: ModelPlan,
                    memo: dict | None = None) -> tuple[tuple[TensorCheck, ...], tuple[TensorRow, ...]]:
    """Every tensor row, evaluated and expanded. With `memo` (Note [Incremental battery] in
    charter.mutation.assemble), a row that resolved without error before, under the same constants,
    is not evaluated again (its dims, counts and names depend on nothing else), and when one row
    differs from the first list resolved, only that row is resolved and spliced in."""
    kept = _row_memo(memo, env, model, a.format)
    base = kept.get("base")
    spliced = _splice(c, a, env, model, base, kept) if base is not None else None
    if spliced is not None:
        return spliced
    out: list[TensorCheck] = []
    rows: list[TensorRow] = []
    seen: dict[str, Location] = {}
    errors_before = len(c.diagnostics)
    for i, t in enumerate(a.tensors):
        placed_row = _place(c, a, t, i, env, model, kept, MAX_EXPANDED_TENSORS - len(out))
        if placed_row is None:
            continue
        if placed_row is _TOO_MANY:
            c.error(Code.SPEC_INVALID, ("tensors", i, "repeat"), f"expands to more than {MAX_EXPANDED_TENSORS} tensors")
            break
        row, checks = placed_row
        rows.append(row)
        for check in checks:
            if check.name in seen:
                c.error(Code.SPEC_INVALID, ("tensors", i, "name"),
                        f"tensor {check.name!r} is also stated at {seen[check.name]}")
                continue
            seen[check.name] = check.location
            out.append(check)
    if memo is not None and base is None and len(c.diagnostics) == errors_before and len(rows) == len(a.tensors):
        kept["base"] = _Base(a.tensors, tuple(out), tuple(rows))
    return tuple(out), tuple(rows)


_TOO_MANY = object()


def _place(c: _Collector, a: ArtifactContract, t, i: int, env: dict, model: ModelPlan, memo: dict, room: int):
    """(row, its checks) of tensor row `i`, None when an error drops it, _TOO_MANY when it expands
    to more names than `room`; rows without error are kept in `memo` (_row_memo)."""
    if not t.repeat and t.layer_kind is None and not any(isinstance(dim, str) for dim in t.shape):
        memo = memo["free"]
    done, placed = memo["rows"], memo["placed"]
    path = ("tensors", i)
    loc = c.at(*path)
    kept = placed.get((i, id(t)))
    if kept is not None and kept[0] is t and kept[1].location == loc:
        return (kept[1], kept[2]) if len(kept[2]) <= room else _TOO_MANY
    parts = done.get(id(t))
    if parts is None or parts[0] is not t:
        errors = len(c.diagnostics)
        resolved = _expand_row(c, a, t, path, env, model)
        if resolved is None:
            return None
        parts = (t, *resolved)
        if len(c.diagnostics) == errors:  # a row with an error is resolved again, to report it again
            done[id(t)] = parts
    _, template, counts, shape, total = parts
    if total > room:
        return _TOO_MANY
    row = TensorRow(template, counts, t.role, shape, t.codec, loc)
    checks = tuple(TensorCheck(name, t.role, shape, t.codec, loc) for name in _expand_counts(template, dict(counts)))
    if done.get(id(t)) is parts:
        placed[(i, id(t))] = (t, row, checks)
    return row, checks


class _Base:
    """The first list of tensor rows resolved without error under a memo's constants (for the
    mutation battery, the contract's own), and where each row's checks are in it."""

    def __init__(self, items, out: tuple[TensorCheck, ...], rows: tuple[TensorRow, ...]) -> None:
        self.items = list(items)
        self.out, self.rows = out, rows
        self.spans: list[tuple[int, int]] = []
        self.owner: dict[str, int] = {}
        at = 0
        for i, row in enumerate(rows):
            n = len(_expand_counts(row.template, dict(row.repeat)))
            self.spans.append((at, at + n))
            for check in out[at:at + n]:
                self.owner[check.name] = i
            at += n


def _splice(c: _Collector, a: ArtifactContract, env: dict, model: ModelPlan, base: _Base, memo: dict):
    """What the loop of _expand_tensors returns, and reports, when the rows are `base`'s (same count,
    by identity), or are but one, which is dropped with its errors, or kept, with or without errors,
    with names no other row has: the loop would report that row's errors alone (every other row
    resolved without error, into names no other row has). None otherwise, and then the loop does it
    all, reporting what it finds."""
    items = a.tensors
    if len(items) == len(base.items) - 1:
        return _dropped(c, items, base)
    if len(items) != len(base.items):
        return None
    differs = changed_at(items, base.items)
    if not differs:  # a leaf outside the tensor rows changed: every row placed as before
        return base.out, base.rows
    if len(differs) != 1:
        return None
    (j,) = differs
    start, end = base.spans[j]
    errors = len(c.diagnostics)
    placed_row = _place(c, a, items[j], j, env, model, memo, MAX_EXPANDED_TENSORS - len(base.out) + (end - start))
    if placed_row is None:  # dropped, its errors reported
        return base.out[:start] + base.out[end:], base.rows[:j] + base.rows[j + 1:]
    if placed_row is _TOO_MANY:
        del c.diagnostics[errors:]  # the loop reports them, in its order
        return None
    row, checks = placed_row
    names = [check.name for check in checks]
    if len(set(names)) != len(names) or any(base.owner.get(n, j) != j for n in names):
        del c.diagnostics[errors:]
        return None
    return base.out[:start] + checks + base.out[end:], base.rows[:j] + (row,) + base.rows[j + 1:]


def _dropped(c: _Collector, items, base: _Base):
    """_splice's answer for `base`'s rows but one, dropped from a document that locates every later
    row where it is written (DroppedItem): the loop would place each row where `base` placed it, at
    the location it had there, without error; None for any other list."""
    moved = c.loaded.doc.locations
    if not (isinstance(moved, DroppedItem) and moved.at == ("tensors",)):
        return None
    j = moved.index
    if not (all(map(operator.is_, items[:j], base.items)) and all(map(operator.is_, items[j:], base.items[j + 1:]))):
        return None
    start, end = base.spans[j]
    return base.out[:start] + base.out[end:], base.rows[:j] + base.rows[j + 1:]


def _row_memo(memo: dict | None, env: dict, model: ModelPlan, fmt: str) -> dict:
    """The rows resolved under these constants: `rows`, `placed` and, once a list resolved without
    error, `base` (fresh dicts without memo); under `free`, those of the rows that read no constant
    (no expression, repeat or layer kind: a frozen contract's every row), kept for every set of
    constants, so a mutant of a model constant resolves only the rows that read one. The memo keeps
    the few sets of constants used last, so such a mutant does not make the next mutant resolve
    every row again. Constants compare by repr, so 1, 1.0 and True are different constants."""
    if memo is None:
        return {"rows": {}, "placed": {}, "free": {"rows": {}, "placed": {}}}
    free = memo.setdefault("free", {}).setdefault(fmt, {"rows": {}, "placed": {}})
    recent = memo.setdefault("constants", {})
    key = (repr(sorted(env.items())), model.layer_kinds, fmt)
    kept = recent.pop(key, None)
    if kept is None:
        kept = {"rows": {}, "placed": {}, "free": free}
        while len(recent) >= _MEMO_CONSTANTS:
            del recent[next(iter(recent))]  # the least recently used
    recent[key] = kept
    return kept


_MEMO_CONSTANTS = 4


def _expand_row(c: _Collector, a: ArtifactContract, t, path: tuple, env: dict, model: ModelPlan):
    """(template, repeat counts, shape, how many names) of one tensor row, or None after an error
    that drops the row (a codec name or a zero dim is reported and the row kept)."""
    _check_codec_name(c, a.format, t.codec, path + ("codec",))
    shape = []
    for j, dim in enumerate(t.shape):
        value = _int(c, dim, env, path + ("shape", j), "uint64")
        if value == 0 and a.format == "gguf":  # safetensors allows empty tensors; ggml never has them
            c.error(Code.EXPR_RANGE, path + ("shape", j), f"a GGUF dim must be positive, got {value}")
        shape.append(value)
    if any(v is None for v in shape):
        return None
    counts = {}
    for name, raw in (t.repeat or {}).items():
        counts[name] = _int(c, raw, env, path + ("repeat", name), "uint32")
    if any(v is None for v in counts.values()):
        return None
    if t.layer_kind is not None:
        if len(counts) != 1:
            c.error(Code.SPEC_INVALID, path + ("layer_kind",), "layer_kind selects the values of one placeholder")
            return None
        if t.layer_kind not in model.layer_kinds:
            c.error(Code.REF_DANGLING, path + ("layer_kind",),
                    f"model {model.id} has no layers of kind {t.layer_kind!r}")
            return None
        (placeholder, count), = counts.items()
        if count != len(model.layer_kinds):
            c.error(Code.SPEC_INVALID, path + ("repeat", placeholder),
                    f"layer_kind tensors repeat over every layer: {len(model.layer_kinds)}, not {count}")
            return None
        counts = {placeholder: tuple(i for i, kind in enumerate(model.layer_kinds) if kind == t.layer_kind)}
    total = 1
    for v in counts.values():
        total *= v if isinstance(v, int) else len(v)
    template = t.name if counts else braces.unescape(t.name)  # Note [Brace escapes]
    return template, tuple(counts.items()), tuple(shape), total


def _expand_counts(template: str, counts: dict) -> list[str]:
    return expand(template, counts.items())


def _store(c: _Collector, name: str, store, env: dict, tensors: tuple[TensorCheck, ...]) -> StorePlan | None:
    """Literal manifest facts of one embedded store, cross-checked against the format's arithmetic."""
    path = ("stores", name)
    values: dict[str, int] = {}

    def num(key: str, raw, at: tuple, ctype: str = "uint64") -> int | None:
        value = _int(c, raw, env, path + at, ctype)
        if value is not None:
            values[key] = value
        return value

    fields = []
    plain = ("version", "family", "layers", "experts", "experts_used") if store.kind == "expert-major-v2" else (
        "version", "family", "heads", "width", "row_alignment", "logical_rows", "rows_per_page", "page_header_bytes")
    for key in plain:
        value = num(key, getattr(store, key), (key,), "uint32" if key != "logical_rows" else "uint64")
        fields.append((key, value, c.at(*path, key)))
    codec = store.codec
    for key, raw, field in (("codec_id", codec.id, "id"), ("group_size", codec.group, "group"),
                            ("group_bytes", codec.group_bytes, "group_bytes")):
        fields.append((key, num(key, raw, ("codec", field), "uint32"), c.at(*path, "codec", field)))
    if store.kind == "ple-rows-v1":
        version = codec.version if codec.version is not None else 1
        fields.append(("codec_version", num("codec_version", version, ("codec", "version"), "uint32"),
                       c.at(*path, "codec", "version")))
        fields.append(("page_alignment", num("page_alignment", store.page_alignment, ("page_alignment",), "uint32"),
                       c.at(*path, "page_alignment")))
    else:
        fields.append(("record_alignment", num("record_alignment", store.record_alignment, ("record_alignment",),
                                               "uint32"), c.at(*path, "record_alignment")))
    if any(v is None for _, v, _ in fields):
        return None
    group = values["group_size"]
    if group <= 0 or values["group_bytes"] <= 0:
        c.error(Code.SPEC_INVALID, path + ("codec",), "codec group and group_bytes must be positive")
        return None
    components: list[Component] = []
    head_rows: list[HeadRow] = []
    if store.kind == "expert-major-v2":
        for i, comp in enumerate(store.components):
            dims = [_int(c, d, env, path + ("components", i, "shape", j), "uint64") for j, d in enumerate(comp.shape)]
            if None in dims:
                return None
            if dims[0] % group:
                c.error(Code.SPEC_INVALID, path + ("components", i, "shape", 0),
                        f"codec group {group} does not divide {comp.name}'s row width {dims[0]} (never padded)")
            components.append(Component(comp.name, dims[0], dims[1], c.at(*path, "components", i)))
        if values["record_alignment"] <= 0:
            c.error(Code.SPEC_INVALID, path + ("record_alignment",), "record_alignment must be positive")
            return None
        size = expertmajor.geometry(values["layers"], values["experts"], [x[:3] for x in components], group,
                                    values["group_bytes"], values["record_alignment"])["size"]
    else:
        for i, raw in enumerate(store.head_rows):
            value = _int(c, raw, env, path + ("head_rows", i), "uint64")
            if value is None:
                return None
            if not is_prime(value):
                c.error(Code.SPEC_INVALID, path + ("head_rows", i), f"head segment {value} is not prime")
            head_rows.append(HeadRow(value, c.at(*path, "head_rows", i)))
        if len(head_rows) != values["heads"]:
            c.error(Code.SPEC_INVALID, path + ("head_rows",), f"{len(head_rows)} head segments for {values['heads']} heads")
        if sum(v for v, _ in head_rows) != values["logical_rows"]:
            c.error(Code.INVARIANT_FALSE, path + ("head_rows",),
                    f"head segments sum to {sum(v for v, _ in head_rows)}, not logical_rows {values['logical_rows']}")
        if values["width"] % group:
            c.error(Code.SPEC_INVALID, path + ("width",),
                    f"codec group {group} does not divide the row width {values['width']} (never padded)")
        if min(values["row_alignment"], values["rows_per_page"], values["page_alignment"]) <= 0:
            c.error(Code.SPEC_INVALID, path, "row_alignment, rows_per_page and page_alignment must be positive")
            return None
        size = ple.geometry(values["logical_rows"], values["row_alignment"], values["width"], group,
                            values["group_bytes"], values["rows_per_page"], values["page_header_bytes"],
                            values["page_alignment"])["size"]
    holder = next((t for t in tensors if t.name == store.tensor), None)
    if holder is None:
        c.error(Code.REF_DANGLING, path + ("tensor",), f"store tensor {store.tensor!r} is not one of the contract's tensors")
        return None
    if holder.shape != (size,):
        c.error(Code.SPEC_INVALID, path + ("tensor",),
                f"{store.tensor} has shape {list(holder.shape)}, but this store's geometry needs [{size}] bytes")
    return StorePlan(name, store.kind, store.tensor, c.at(*path), tuple(StoreField(*f) for f in fields), tuple(components),
                     tuple(head_rows), codec.name, codec.label)


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin (exact for n < 3.3e24)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    for p in small:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


# --- kernel -----------------------------------------------------------------------------------


def check_kernel(loaded: LoadedContract, models: dict[str, ModelPlan]) -> None:
    """Every shape entry of a kernel names a constant of each model or a declared free dim."""
    k = loaded.contract
    assert isinstance(k, KernelContract)
    c = _Collector(loaded)
    for model_id in k.models:
        model = models.get(model_id)
        if model is None:
            continue
        env = dict(model.constants)
        env.update({d: 1 for d in k.dims})
        for group in ("inputs", "outputs"):
            for i, arg in enumerate(getattr(k, group)):
                for j, dim in enumerate(arg.shape):
                    _int(c, dim, env, (group, i, "shape", j), "uint64")
        for name, attr in k.attributes.items():
            if attr.value is not None:
                c.attempt(_value, c, attr.value, env, ("attributes", name, "value"), attr.type)
    c.finish()
