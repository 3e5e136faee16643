"""What an admission is asked to do, stated once for both engines."""

from __future__ import annotations

from dataclasses import dataclass

from charter.formats.gguf import MAX_HEADER_BYTES
from charter.language import STATUSES

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
    only, owned_keys, skip: a bundle's weight file (Note [Bundle stages] in charter.bundles.admit):
        the tensors it holds (None: every tensor of the contract), the metadata keys a bundle stage
        owns, the stages that do not run on it (a GGUF split set's later splits).
    """

    require_status: str | None = None
    verify_payload: bool = False
    max_header_bytes: int = MAX_HEADER_BYTES
    companion: Companion | None = None
    only: frozenset[str] | None = None
    owned_keys: frozenset[str] = frozenset()
    skip: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.require_status is not None and self.require_status not in STATUSES:
            raise ValueError(f"{self.require_status!r} is not a status ({', '.join(STATUSES)})")

    @property
    def status(self) -> str | None:
        """The required status by its name, as the runtimes compare it."""
        return self.require_status


class EngineUnavailable(RuntimeError):
    """The C++ engine cannot judge this here: charter._native is not built, holds no checker for
    the contract or a stale one, or the checker cannot evaluate the contract (INTERNAL). Defined
    here, beside the options, so that a caller of the Python engine can catch it without importing
    the C++ engine's module."""
