"""What a file is, from its first bytes: the one format sniff before any reader runs.

Note [Format sniff]
~~~~~~~~~~~~~~~~~~~
A reader handed the wrong kind of file reports a symptom: a CTranslate2 `model.bin` read as
safetensors has a "header length 7518478154457939974" (its version 6, a string length and "Wh" of
"WhisperSpec", as one u64). So admission (`read_view`, `parse_view`; `rt::run` in C++), the
mutation battery and `freeze` first look at the file's first SNIFF_BYTES bytes (all of it when
shorter) and name its format, the first rule that matches winning:

1. `GGUF`                                    gguf
2. `PK\x03\x04` or `PK\x05\x06`             zip (torch.save writes one: pytorch_model.bin, *.pt)
3. `\x80` then a protocol byte 2..5           pickle (a legacy torch.save file, a .pkl)
4. an optional UTF-8 BOM, JSON whitespace,   json (a config, or a sharded checkpoint's index such
   then `{` or `[`; no other control byte     as model.safetensors.index.json)
5. 8 bytes (the header length), then `{`     safetensors (a real length <= 100,000,000 has zero
                                             bytes 4..7, so no JSON text looks like one)
6. anything else                             unknown

`require_format` then rejects with CONTAINER_FORMAT (stage container, field `format`, offset 0)
when the sniff names another format than the expected one. A file of no known format is rejected
so too, unless it may still be a damaged file of the expected format, which that format's reader
describes better: for GGUF always (its first check, CONTAINER_MAGIC, already says "not GGUF"), for
safetensors when its first 8 bytes are missing (CONTAINER_TRUNCATED) or a length within the cap
(the JSON after it is damaged: CONTAINER_JSON and the rest). `freeze` expects whichever of the two
the sniff names, and safetensors when it names neither.

The verdict must not depend on how much of the file a caller holds (docs/native.md): a buffer
shorter than the sniff's window of a longer file is CONTAINER_TRUNCATED (field `format`), the
diagnostic after which the C++ engine asks for more bytes.
"""

from __future__ import annotations

import os
import re

from charter.diagnostics import CharterError, Code, Diagnostic

SNIFF_BYTES = 16
READABLE = ("gguf", "safetensors")
_JSON_WS = b" \t\n\r"
_NOT_IN_JSON = frozenset(range(0x20)).difference(_JSON_WS)  # the control bytes JSON text never holds
_JSON_START = re.compile(b"[" + re.escape(_JSON_WS) + rb"]*[{\[]")  # whitespace, then an object or an array
_BOM = b"\xef\xbb\xbf"

_WHAT = {
    "gguf": "a GGUF file",
    "safetensors": "a safetensors file",
    "zip": "a zip archive (torch.save writes one: pytorch_model.bin, *.pt)",
    "pickle": "a Python pickle (a legacy torch.save file; charter never unpickles)",
    "json": "JSON text (a config, or a sharded checkpoint's index such as model.safetensors.index.json)",
}


def sniff(head: bytes) -> str:
    """The format the first bytes name (Note [Format sniff]): gguf, safetensors, zip, pickle, json
    or unknown. `head`: the file's first SNIFF_BYTES bytes, or all of it when shorter."""
    if head[:4] == b"GGUF":
        return "gguf"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "pickle"
    if _json_text(head):
        return "json"
    if head[8:9] == b"{":
        return "safetensors"
    return "unknown"


def _json_text(head: bytes) -> bool:
    text = head[len(_BOM):] if head.startswith(_BOM) else head
    return _NOT_IN_JSON.isdisjoint(text) and _JSON_START.match(text) is not None


def require_format(head, file_size: int, expected: str | None = None) -> str:
    """The format to read the file as, or a CONTAINER_FORMAT rejection (Note [Format sniff]).
    `head`: the bytes the caller holds from offset 0; `expected`: the contract's format, or None
    (freeze) for whichever of GGUF and safetensors the bytes name."""
    want = min(max(int(file_size), 0), SNIFF_BYTES)
    if len(head) < want:
        raise CharterError([Diagnostic(
            Code.CONTAINER_TRUNCATED, "format",
            f"the provided buffer holds {len(head)} bytes; telling the format needs the first {want}",
            f">= {want} bytes", str(len(head)), offset=0)])
    head = bytes(head[:want])
    found = sniff(head)
    target = expected or (found if found in READABLE else "safetensors")
    if found == target or (found == "unknown" and _may_be_damaged(target, head)):
        return target
    wanted = f"the contract expects {expected}" if expected else "charter reads GGUF and safetensors files"
    raise CharterError([Diagnostic(
        Code.CONTAINER_FORMAT, "format", f"this is {describe(found, head)}; {wanted}",
        repr(expected) if expected else "'gguf' or 'safetensors'", repr(found), offset=0)])


def read_head(path) -> tuple[bytes, int] | None:
    """The first SNIFF_BYTES bytes of the file at `path` and its size, or None when it cannot be
    read (the reader then reports CONTAINER_UNREADABLE)."""
    try:
        with open(path, "rb") as f:
            return f.read(SNIFF_BYTES), os.fstat(f.fileno()).st_size
    except OSError:
        return None


def _may_be_damaged(fmt: str, head: bytes) -> bool:
    """Whether a file of no known format may be a damaged `fmt` file (Note [Format sniff])."""
    from charter.formats.safetensors import MAX_HEADER_BYTES  # a GGUF admission never imports that reader

    return fmt == "gguf" or len(head) < 8 or int.from_bytes(head[:8], "little") <= MAX_HEADER_BYTES


def describe(found: str, head: bytes) -> str:
    """What a sniffed file is, for a message."""
    if found != "unknown":
        return _WHAT[found]
    from charter.formats.safetensors import MAX_HEADER_BYTES

    n = int.from_bytes(head[:8], "little")
    return (f"no format charter knows (it starts {head[:8].hex(' ')}: no GGUF magic, and as a safetensors header "
            f"length {n} is over the {MAX_HEADER_BYTES}-byte limit)")
