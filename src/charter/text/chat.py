"""Chat rendering with transformers' `apply_chat_template` semantics, and the trust segments of a render.

The environment is the one transformers builds for a chat template (read from its
`chat_template_utils`; written here, not imported): Jinja2's `ImmutableSandboxedEnvironment` with
`trim_blocks` and `lstrip_blocks`, the `loopcontrols` extension, a `tojson` filter that is
`json.dumps` with `ensure_ascii=False` (Jinja's own `tojson` escapes `<`, `>`, `&` and `'` for HTML
and sorts keys; transformers replaces it), and the globals `raise_exception` (raises
`TemplateError(message)`) and `strftime_now`. The variables are `messages`, `tools`,
`add_generation_prompt`, and the contract's `variables` (transformers passes the special tokens:
`bos_token`, `eos_token`, ...). transformers' `{% generation %}` tag (AssistantTracker, used only for
assistant masks) is not provided: a template that uses it fails to parse, and says so.

Note [Trust segments]
~~~~~~~~~~~~~~~~~~~~~
A render is one string plus a gap-free sequence of segments, each DATA (caller text) or
TRUSTED_CONTROL (template-authored text; AFN-006). Provenance is carried, never recovered from the
spelling: every string of the request (message fields, tool schemas) enters the template as a
`Tracked` string, whose `+` keeps per-character authorship and whose other str operations (strip,
replace, slicing, %, format, ...) return text that is all DATA (derived from caller text is caller
text). Chunks the template yields are TRUSTED_CONTROL unless tracked. An operation that loses the
tracking (Jinja's `~`, `join` on a literal separator, a filter that rebuilds the string) would make
caller text look template-authored, so every render is repeated with a probe: each caller string
but roles and types gets U+FDD0 (a Unicode noncharacter) appended; with U+FDD0 removed from its DATA
segments (and DATA segments left empty dropped), the probe's control segments must equal the render's,
and none may contain U+FDD0 (DATA itself may differ: `trim` sees the probe). A template that moves caller text into
control output by an untracked path fails closed (TEXT_SEGMENTS), it is never labelled trusted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

PROBE = "\ufdd0"
UNPROBED_KEYS = frozenset({"role", "type"})


class Tracked(str):
    """A str whose characters carry their authorship: `runs` is a tuple of (kind, length)."""

    def __new__(cls, value: str, runs: tuple):
        s = str.__new__(cls, value)
        s.runs = runs
        return s

    def __str__(self):
        return self

    def __add__(self, other):
        if not isinstance(other, str):  # as for a plain str: the other's __radd__, then str's own TypeError
            reflected = getattr(type(other), "__radd__", None)
            result = NotImplemented if reflected is None else reflected(other, self)
            return str.__add__(self, other) if result is NotImplemented else result
        return Tracked(str.__add__(self, other), _merge(self.runs + runs_of(other)))

    def __radd__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return Tracked(str.__add__(other, self), _merge(runs_of(other) + self.runs))

    def __mod__(self, other):
        return data(str.__mod__(self, other))

    def __rmod__(self, other):
        return data(str.__mod__(other, self))

    def __getitem__(self, key):
        return data(str.__getitem__(self, key))


def _derived(name):
    method = getattr(str, name)

    def wrapper(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        if isinstance(result, str):
            return data(result)
        if isinstance(result, (list, tuple)):
            return type(result)(data(r) if isinstance(r, str) else r for r in result)
        return result

    wrapper.__name__ = name
    return wrapper


for _name in ("strip", "lstrip", "rstrip", "upper", "lower", "title", "capitalize", "casefold", "swapcase",
              "replace", "split", "rsplit", "splitlines", "partition", "rpartition", "format", "center", "ljust",
              "rjust", "zfill", "expandtabs", "removeprefix", "removesuffix", "join", "translate", "__mul__",
              "__rmul__", "format_map"):
    setattr(Tracked, _name, _derived(_name))
# An error message names a str's type as `str`: so does a Tracked one (`'a' - x` says 'str').
Tracked.__name__ = Tracked.__qualname__ = "str"


def data(s: str) -> str:
    return Tracked(s, (("data", len(s)),)) if s else s


def runs_of(s: str) -> tuple:
    if isinstance(s, Tracked):
        return s.runs
    return (("control", len(s)),) if s else ()


def _merge(runs) -> tuple:
    out: list[list] = []
    for kind, n in runs:
        if n == 0:
            continue
        if out and out[-1][0] == kind:
            out[-1][1] += n
        else:
            out.append([kind, n])
    return tuple((k, n) for k, n in out)


def track(value, probe: bool = False, key: str | None = None):
    """The request with every string tracked as DATA (and, for the probe, marked)."""
    if isinstance(value, str):
        if probe and key not in UNPROBED_KEYS:
            value = value + PROBE
        return data(value) if value else Tracked("", ())
    if isinstance(value, dict):
        return {k: track(v, probe, k) for k, v in value.items()}
    if isinstance(value, list):
        return [track(v, probe, key) for v in value]
    return value


# --- the environment --------------------------------------------------------------------------


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    text = json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    return data(text) if _has_tracked(x) else text


def _has_tracked(x) -> bool:
    if isinstance(x, Tracked):
        return True
    if isinstance(x, dict):
        return any(_has_tracked(k) or _has_tracked(v) for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return any(_has_tracked(v) for v in x)
    return False


def _raise_exception(message):
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _strftime_now(fmt):
    return datetime.now().strftime(fmt)


def compile_template(source: str):
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(source)


@dataclass(frozen=True)
class Render:
    rendered: str | None
    segments: list[tuple[str, str]] | None  # (kind, text); kind "data" | "control"
    error: str | None


def error_text(exc: BaseException) -> str:
    """An error as a case states it: `Type: message`."""
    return f"{type(exc).__name__}: {exc}"


def request(case, defaults: dict) -> dict:
    """The template variables of a chat case: messages (only the fields the case sets), tools, flags."""
    messages = [m.model_dump(mode="json", exclude_unset=True) for m in case.messages]
    agp = case.add_generation_prompt if case.add_generation_prompt is not None else defaults.get("add_generation_prompt")
    reserved = {"messages", "tools", "add_generation_prompt"}
    return {**{k: v for k, v in case.kwargs.items() if k not in reserved},
            "messages": messages, "tools": case.tools, "add_generation_prompt": agp}


def render(source: str, variables: dict, req: dict) -> Render:
    """Render with segments; a failing render returns only its error (a failed render has no output)."""
    try:
        template = compile_template(source)
    except Exception as exc:  # a template that does not parse is a finding about the template
        return Render(None, None, error_text(exc))
    try:
        runs = _runs(template, variables, track(req))
        # Only message and tool text is probed: flags and switches steer the template's control flow.
        probed = {k: track(v, probe=k in ("messages", "tools")) for k, v in req.items()}
        probe = _runs(template, variables, probed)
    except Exception as exc:  # the template's own error (TemplateError, TypeError, UndefinedError, ...)
        return Render(None, None, error_text(exc))
    text = "".join(t for _, t in runs)
    unprobed = _merge_texts([(k, t.replace(PROBE, "") if k == "data" else t) for k, t in probe])
    controls = [t for k, t in runs if k == "control"]
    if [t for k, t in unprobed if k == "control"] != controls or any(PROBE in t for k, t in probe if k == "control"):
        raise SegmentError("the template moves caller text into its output by an untracked operation (for example "
                           "`~` or `join`): its control segments change when caller text does")
    return Render(text, runs, None)


class SegmentError(Exception):
    """The segments of a render cannot be derived: refused, never guessed."""


def _runs(template, variables: dict, req: dict) -> list[tuple[str, str]]:
    pieces: list[tuple[str, str]] = []
    for chunk in template.generate(**{**variables, **req}):
        pos = 0
        for kind, n in runs_of(chunk):
            pieces.append((kind, str.__getitem__(chunk, slice(pos, pos + n))))
            pos += n
    return _merge_texts(pieces)


def _merge_texts(pieces) -> list[tuple[str, str]]:
    merged: list[list[str]] = []
    for kind, t in pieces:
        if not t:
            continue
        if merged and merged[-1][0] == kind:
            merged[-1][1] += t
        else:
            merged.append([kind, t])
    return [(k, t) for k, t in merged]


def plain_render(source: str, variables: dict, req: dict) -> str:
    """The render without tracking (what a caller of apply_chat_template gets)."""
    return compile_template(source).render(**{**variables, **req})


def check_policy(case, policy) -> str | None:
    """charter's own refusals before any render (contract controls): roles, structured media."""
    for i, m in enumerate(case.messages):
        if m.role not in policy.roles:
            return f"ChatPolicyError: messages[{i}].role {m.role!r} is not one of {policy.roles}"
        if policy.text_only and isinstance(m.content, list):
            for j, part in enumerate(m.content):
                if part.type != "text":
                    return (f"ChatPolicyError: messages[{i}].content[{j}] is a {part.type!r} part; this model is "
                            f"text-only")
    return None


def minijinja_render(source: str, variables: dict, req: dict) -> tuple[str | None, str | None]:
    """The second renderer: MiniJinja (Rust), with the same options and helpers. (text, error)."""
    import minijinja

    env = minijinja.Environment()
    env.trim_blocks = True
    env.lstrip_blocks = True

    def raise_exception(message):
        raise minijinja.TemplateError(message)

    env.add_function("raise_exception", raise_exception)
    env.add_filter("tojson", lambda x, **kw: _tojson(x, **kw))
    try:
        return env.render_str(source, **{**variables, **req}), None
    except Exception as exc:
        return None, error_text(exc)
