"""Write plain data as YAML that charter's strict loader reads back to the same values.

PyYAML's emitter follows YAML 1.1: it leaves `1e-5` or `0x1F` unquoted as strings, which the
strict loader would read differently or refuse. Every string the loader would not read back as
itself is double-quoted here; everything else keeps PyYAML's choice. Output is deterministic:
keys keep their given order, no aliases, LF line endings.
"""

from __future__ import annotations

from typing import Any

import yaml

from charter.diagnostics import CharterError, Location
from charter.contract.yamlload import resolve_plain


_BREAKS = "\x85\u2028\u2029"  # line breaks to a YAML reader, though not to str.isprintable


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    try:
        plain_ok = resolve_plain(data, "", Location("<dump>")) == data and data == data.strip()
    except CharterError:
        plain_ok = False
    if not plain_ok or not all(c.isprintable() and c not in _BREAKS for c in data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


def _represent_float(dumper: yaml.SafeDumper, data: float) -> yaml.ScalarNode:
    text = repr(data)  # shortest text that reads back to the same double
    if "." not in text:  # YAML 1.1 floats need a dot: 1e-05 -> 1.0e-05, 3 -> 3.0
        mantissa, e, exponent = text.partition("e")
        text = f"{mantissa}.0{e}{exponent}"
    return dumper.represent_scalar("tag:yaml.org,2002:float", text)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(float, _represent_float)


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


def node_count(data: Any) -> int:
    """How many YAML nodes `dump(data)` composes into (each key is a node, no aliases): what the
    loader's MAX_NODES bounds, known before a large contract is rendered."""
    if isinstance(data, dict):
        return 1 + sum(1 + node_count(v) for v in data.values())
    if isinstance(data, list):
        return 1 + sum(node_count(v) for v in data)
    return 1
