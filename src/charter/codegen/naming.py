"""File and symbol names derived from contract ids; ids are `[a-z0-9][a-z0-9._-]*`, so a name
can never contain a path separator or escape the output directory."""

from __future__ import annotations

import re

_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")


def module_name(contract_id: str) -> str:
    if not _ID.fullmatch(contract_id):
        raise ValueError(f"not a contract id: {contract_id!r}")
    name = re.sub(r"[^a-z0-9_]", "_", contract_id)
    return name if not name[0].isdigit() else f"c_{name}"
