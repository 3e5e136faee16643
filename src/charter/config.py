"""A project's charter settings: `[tool.charter]` in its pyproject.toml (docs/cli.md#configuration).

Note [Finding the configuration]: the project is the directory of the first `pyproject.toml` found
walking up from the working directory; nothing above it is read (a checkout inside another
project's tree is its own project, as in ruff and datamodel-code-generator). A pyproject.toml
that holds no charter table (mentions_charter) is not parsed at all: `charter admit` on its cold path pays one
`stat` per parent directory and, at most, one read, never a TOML parse it does not need. A
pyproject.toml without a `[tool.charter]` table still ends the walk, and the defaults apply.
Relative paths in the table are relative to the pyproject.toml's directory; the command line
overrides every key. An unknown key, or a value of the wrong type, is a usage error (exit 2).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

ENGINES = ("python", "cpp")
BATTERY_ENGINES = ("python", "both")
FORMATS = ("text", "json", "github")


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and the key."""


class Limits(NamedTuple):
    """Bounds on what charter reads (charter.contract.yamlload); raise them for a larger contract.
    NamedTuples, not dataclasses, here: a cold `charter admit` builds these classes too."""

    contract_bytes: int = 16 * 1024 * 1024
    yaml_nodes: int = 200_000
    yaml_depth: int = 64
    yaml_aliases: int = 16


class Config(NamedTuple):
    """The settings of one run; `file` is the pyproject.toml they came from (None: the defaults)."""

    file: Path | None = None
    specs: str = "specs"
    generated: str = "generated"
    search: tuple[str, ...] = ()
    engine: str = "python"
    battery_engine: str = "python"
    jobs: int | None = None
    format: str = "text"
    require_status: str | None = None
    diff_allowlist: str | None = None  # charter diff's allowlist (charter.diff.allowlist)
    limits: Limits = Limits()

    @property
    def root(self) -> Path | None:
        return self.file.parent if self.file is not None else None


def find_pyproject(start: Path | None = None) -> Path | None:
    """The first pyproject.toml at or above `start` (default: the working directory)."""
    here = Path(os.path.abspath(start or os.getcwd()))
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def discover(start: Path | None = None) -> Config:
    """The settings of the project `start` lies in (Note [Finding the configuration])."""
    path = find_pyproject(start)
    if path is None:
        return Config()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    if not mentions_charter(raw):
        return _defaults(path)
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    table = data.get("tool", {}).get("charter") if isinstance(data.get("tool"), dict) else None
    if table is None:
        return _defaults(path)
    return from_table(table, path)


def _defaults(path: Path) -> Config:
    """The defaults in the project of `path`: its specs/ and generated/, from any sub-folder."""
    return Config(file=path, specs=_relative(path.parent, "specs"), generated=_relative(path.parent, "generated"))


# A `[tool.charter]` table is written as a header (`[tool.charter]`, `[tool."charter".limits]`), as
# dotted keys (`tool.charter.specs = ...`), or inside a `[tool]` table or an inline `tool = {...}`.
_DOTTED = re.compile(rb"""tool\s*\.\s*["']?charter\b""")
_TOOL_TABLE = re.compile(rb"""^\s*\[\s*["']?tool["']?\s*\]|^\s*tool\s*=\s*\{""", re.M)


def mentions_charter(raw: bytes) -> bool:
    """Whether a pyproject.toml may hold charter settings: if not, it is not parsed (a project
    named charter, like this one, only says so in [project])."""
    return b"charter" in raw and (_DOTTED.search(raw) is not None or _TOOL_TABLE.search(raw) is not None)


_STRINGS = {"specs": None, "generated": None, "engine": ENGINES, "battery-engine": BATTERY_ENGINES,
            "format": FORMATS, "require-status": ("structural", "pinned-not-supported", "supported"),
            "diff-allowlist": None}


def from_table(table: object, path: Path) -> Config:
    """The Config a `[tool.charter]` table states, every key checked."""
    where = f"{path}: [tool.charter]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    known = set(_STRINGS) | {"search", "jobs", "limits"}
    for key in table:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(known))})")
    values: dict[str, object] = {"specs": "specs", "generated": "generated"}
    for key, choices in _STRINGS.items():
        if key in table:
            value = table[key]
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: {key} must be a non-empty string, not {value!r}")
            if choices is not None and value not in choices:
                raise ConfigError(f"{where}: {key} must be one of {', '.join(choices)}, not {value!r}")
            values[key.replace("-", "_")] = value
    for key in ("specs", "generated", "diff_allowlist"):
        if key in values:
            values[key] = _relative(path.parent, values[key])
    if "search" in table:
        search = table["search"]
        if not isinstance(search, list) or not all(isinstance(s, str) and s for s in search):
            raise ConfigError(f"{where}: search must be a list of non-empty strings, not {search!r}")
        values["search"] = tuple(_relative(path.parent, s) for s in search)
    if "jobs" in table:
        jobs = table["jobs"]
        if type(jobs) is not int or jobs < 1:
            raise ConfigError(f"{where}: jobs must be a positive integer, not {jobs!r}")
        values["jobs"] = jobs
    if "limits" in table:
        values["limits"] = _limits(table["limits"], where)
    return Config(file=path, **values)


def _limits(table: object, where: str) -> Limits:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: limits must be a table")
    names = {name.replace("_", "-"): name for name in Limits._fields}
    out = {}
    for key, value in table.items():
        if key not in names:
            raise ConfigError(f"{where}: unknown key limits.{key} (known: {', '.join(sorted(names))})")
        if type(value) is not int or value < 1:
            raise ConfigError(f"{where}: limits.{key} must be a positive integer, not {value!r}")
        out[names[key]] = value
    return Limits(**out)


def _relative(base: Path, value: str) -> str:
    """`value`, relative to the pyproject.toml's folder `base`, as an absolute path (it stays right
    whatever the working directory; what is printed is shown from there, charter.contract.paths.shown)."""
    return os.path.normpath(value if os.path.isabs(value) else os.path.join(base, value))


_active = Config()


def active() -> Config:
    """The settings charter.cli found for this run (the defaults outside a command line)."""
    return _active


def activate(config: Config) -> None:
    """Make `config` this run's. Configured limits reach the YAML loader when it is imported, or
    now if it already is (the loader imports PyYAML, which a cold admission never does)."""
    import sys

    global _active
    _active = config
    loader = sys.modules.get("charter.contract.yamlload")
    if loader is not None and config.limits != Limits():
        loader.apply_limits(config.limits)
