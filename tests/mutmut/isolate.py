"""pytest plugin loaded with `-p tests.mutmut.isolate` by mutmut only ([tool.mutmut] pytest_add_cli_args).

mutmut 3 copies the sources into `mutants/`, puts `mutants/src` and `mutants/` first on sys.path
and runs pytest from inside `mutants/`. charter's editable install (scikit-build-core) adds a
meta path finder at sys.meta_path[0] that maps every `charter.*` module to the original tree, so
without this plugin the tests would import the unmutated sources and every mutant would survive
(or be reported "no tests"). This plugin removes that finder before anything imports charter, and
refuses to run when charter still resolves outside `mutants/`: a misconfigured gate fails loudly
instead of reporting a meaningless score. The compiled charter._native (C++, never mutated) is
not in the copy: the plugin loads the editable install's build of it as charter._native, so the
runtime's calls into it (the C++ value scanner) are tested in the gate too.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # mutants/ during a mutmut run


def _drop_editable_finders() -> None:
    for finder in list(sys.meta_path):
        if type(finder).__name__ in ("ScikitBuildRedirectingFinder", "ScikitBuildInplaceFinder"):
            sys.meta_path.remove(finder)
    for name in [n for n in sys.modules if n == "charter" or n.startswith("charter.")]:
        module_file = getattr(sys.modules[name], "__file__", None) or ""
        if not Path(module_file).resolve().is_relative_to(ROOT):
            del sys.modules[name]


def _native_origin() -> str | None:
    """The file of the installed charter._native (found through the editable install's finder)."""
    try:
        spec = importlib.util.find_spec("charter._native")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


_NATIVE = _native_origin()
_drop_editable_finders()

import charter  # noqa: E402  (after the finder is gone)

if ROOT.name == "mutants" and not Path(charter.__file__).resolve().is_relative_to(ROOT):
    raise ImportError(f"mutmut run imports charter from {charter.__file__}, not from the mutated copy in {ROOT}")
if _NATIVE is not None and not Path(ROOT / "src" / "charter").joinpath(Path(_NATIVE).name).exists():
    from charter.engines.cpp import load_module_file  # noqa: E402  (the mutated copy's)

    load_module_file(_NATIVE)


def pytest_configure(config):
    """Hypothesis in the gate: the examples CI runs (derandomized: the same verdict for a mutant on
    every run), no example database, and no shrinking -- a failing example kills the mutant as it
    is; shrinking it only costs time. After the conftests, so that it wins over their profile."""
    from hypothesis import Phase, settings

    settings.register_profile("mutmut", derandomize=True, database=None, phases=[Phase.explicit, Phase.generate])
    settings.load_profile("mutmut")


def pytest_collection_modifyitems(items):
    """mutmut gives each mutant's tests back to pytest by node id, and pytest cannot select again an
    id it escaped (a backslash, a control or non-ASCII character): such a test errors out under
    every mutant, which mutmut reports as a timeout. Refuse the run instead (ids=plain_id in
    tests/formats/conftest.py makes such ids plain)."""
    import pytest

    unselectable = [i.nodeid for i in items if "\\" in i.nodeid or not (i.nodeid.isascii() and i.nodeid.isprintable())]
    if unselectable:
        raise pytest.UsageError("test ids pytest cannot select again (give them plain ids):\n  "
                                + "\n  ".join(unselectable[:10]))
