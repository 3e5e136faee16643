"""Hand-made artifact views for the runtime tests: every offset distinct, so a diagnostic that
reports the wrong one (or none) is told apart."""

from __future__ import annotations

import inspect

from charter.admission.runtime import Context, Rejected
from charter.admission.view import ArtifactView, MetaEntry, TensorEntry
from charter.formats.gguf import GGUFArray, GGUFValueType


def meta(key: str, type_: str, value, element: str | None = None, at: int = 100) -> MetaEntry:
    """An entry starting at `at`: type tag at at+10, value at at+20."""
    return MetaEntry(key, type_, value, element, at, at + 10, at + 20)


def array(elem: GGUFValueType, items: list, at: int = 500) -> GGUFArray:
    """An array whose element tag is at `at` (count at at+4, data at at+12)."""
    return GGUFArray.from_items(elem, items, at)


def tensor(name: str, shape: tuple, codec: str, start: int, end: int, record: int = 40) -> TensorEntry:
    return TensorEntry(name, tuple(shape), codec, start, end, record)


def view(*entries: MetaEntry, tensors=(), fmt: str = "gguf", version: int | None = 3, alignment: int | None = 32,
         header_len_aligned: bool | None = None, header_end: int = 60, data_offset: int = 64,
         file_size: int | None = None) -> ArtifactView:
    tensors = tuple(tensors)
    if file_size is None:
        file_size = max([data_offset] + [t.end for t in tensors])
    return ArtifactView(fmt, version, alignment, header_len_aligned, header_end, data_offset, file_size,
                        {e.key: e for e in entries}, tensors, None)


def ctx(v: ArtifactView, path: str = "/nonexistent/artifact.gguf", require_status: str | None = None,
        reader=None) -> Context:
    return Context(v, path, require_status, reader)


def rejection(call, *args, **kwargs) -> dict:
    """The diagnostic (as JSON) that `call(*args, **kwargs)` raises; fails the test if it returns.
    Context's checks take keyword arguments (as generated checkers pass them): positional `args`
    are given the names of its parameters, in order; a dict among them gives several names."""
    names = [n for n, p in inspect.signature(call).parameters.items() if p.kind is p.KEYWORD_ONLY]
    if names:  # a check; helpers such as fail() take their arguments by position
        for name, arg in zip(names, args):
            if isinstance(arg, dict) and len(args) < len(names):
                kwargs.update(arg)
            else:
                kwargs[name] = arg
        args = ()
    try:
        call(*args, **kwargs)
    except Rejected as r:
        d = r.diagnostic.to_json()
        assert str(r) == r.diagnostic.render()
        return d
    raise AssertionError(f"{call.__name__}{args} did not reject")


def diag(code: str, field: str, message: str, expected=None, actual=None, location=None, offset=None,
         stage: str | None = None) -> dict:
    from charter.diagnostics import Code

    return {"stage": stage or Code(code).stage.value, "code": code, "field": field, "message": message,
            "expected": expected, "actual": actual, "location": location, "offset": offset}
