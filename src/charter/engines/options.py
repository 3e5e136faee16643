"""What an admission is asked to do, stated once for both engines."""

from __future__ import annotations

from dataclasses import dataclass

from charter.formats.gguf import MAX_HEADER_BYTES
from charter.contract.models import Status

Companion = bytes | str  # a companion file's bytes as read, or why it could not be read


@dataclass(frozen=True)
class Options:
    """The options of one admission: rt::Options of native/include/charter/admission.hpp, which the
    C++ engine is handed field by field, plus the payload stage, which only the Python runtime runs.

    require_status: reject a contract whose status is below this (`admit --require-status`).
    verify_payload: also run the payload stage (it reads tensor bytes).
    max_header_bytes: the strict GGUF reader's cap on the header (both engines' readers).
    companion: the file a contract's `config` binds, as read (charter.engines.cpp.read_companion),
        for a header span; the companion of a file is read beside it.
    """

    require_status: Status | None = None
    verify_payload: bool = False
    max_header_bytes: int = MAX_HEADER_BYTES
    companion: Companion | None = None

    def __post_init__(self) -> None:
        if self.require_status is not None and not isinstance(self.require_status, Status):
            object.__setattr__(self, "require_status", Status(self.require_status))  # ValueError if unknown

    @property
    def status(self) -> str | None:
        """The required status by its name, as the runtimes compare it."""
        return None if self.require_status is None else self.require_status.value
