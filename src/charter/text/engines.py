"""The tokenizer implementations a text contract is checked with, behind one small interface.

* `HFTokenizer`: the Rust `tokenizers` library. On a tokenizer.json it is the definition's own
  implementation (what transformers runs); on GGUF tables it is a BPE built from the tables alone
  (tokens, merges, the control tokens), with the pre-tokenizer that `tokenizer.ggml.pre` names
  (PRE_TOKENIZERS), so it shares no code with llama.cpp.
* `LlamaCppTokenizer`: llama.cpp's tokenizer on the GGUF tables, through llama-cpp-python with
  `vocab_only=True` (no weights are loaded). The opt-in `capture` extra.
* `charter.text.wordpiece.WordPiece`: charter's own transcription of the BERT normalizer,
  pre-tokenizer, WordPiece model, post-processor and decoder, from the tokenizer.json facts; it does
  not import `tokenizers`.

encode(text, special, add_special) -> ids; decode(ids, skip_special) -> str or bytes.
"""

from __future__ import annotations

import functools
from importlib import metadata

from charter.diagnostics import CharterError, Code, Diagnostic


@functools.lru_cache(maxsize=64)
def _installed(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def require(producer, where: str) -> None:
    """The producer's distribution is installed at exactly the pinned version."""
    try:
        installed = _installed(producer.package)
        if installed is None:
            raise metadata.PackageNotFoundError(producer.package)
    except metadata.PackageNotFoundError:
        raise CharterError([Diagnostic(Code.TEXT_PRODUCER, f"{where}.package",
                                       f"{producer.package}=={producer.version} is not installed")]) from None
    if installed != producer.version:
        raise CharterError([Diagnostic(Code.TEXT_PRODUCER, f"{where}.version",
                                       f"expected {producer.package}=={producer.version}, installed {installed}",
                                       producer.version, installed)])


def as_text(text: "str | bytes") -> str:
    """A str-only tokenizer's input: bytes that are not UTF-8 pass through Python's decoder with
    replacement (one U+FFFD per maximal invalid subpart). That is this adapter's choice, not the
    tokenizer's: where it differs from a bytes tokenizer, the case documents a finding."""
    return text if isinstance(text, str) else text.decode("utf-8", "replace")


def _smollm():
    from tokenizers import pre_tokenizers

    # SmolLM2's own tokenizer.json: single digits split off, then GPT-2's byte-level regex, no prefix space.
    return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])


def _gpt2():
    from tokenizers import pre_tokenizers

    return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)


# tokenizer.ggml.pre -> the pre-tokenizer of the tables' source tokenizer.json (only those checked here).
PRE_TOKENIZERS = {"smollm": _smollm, "gpt2": _gpt2}


class HFTokenizer:
    def __init__(self, definition):
        from tokenizers import AddedToken, Tokenizer, decoders, models

        if definition.kind == "tokenizer.json":
            tk = Tokenizer.from_str(definition.json_text)
            tk.no_padding()  # padding is a fact of the file (tokenizer.config.padding), applied by callers
        else:
            if definition.model != "gpt2" or definition.pre not in PRE_TOKENIZERS:
                raise CharterError([Diagnostic(Code.TEXT_TOKENIZER, "tokenizer.pre",
                                               f"no cross-check tokenizer for GGUF model {definition.model!r}, "
                                               f"pre {definition.pre!r} (known: gpt2 with {sorted(PRE_TOKENIZERS)})")])
            vocab = {t: i for i, t in enumerate(definition.tokens)}
            if len(vocab) != len(definition.tokens):
                raise CharterError([Diagnostic(Code.TEXT_TOKENIZER, "tokenizer.vocab",
                                               "the GGUF token list holds a token twice")])
            tk = Tokenizer(models.BPE(vocab, [tuple(m) for m in definition.merges], fuse_unk=False))
            tk.pre_tokenizer = PRE_TOKENIZERS[definition.pre]()
            tk.decoder = decoders.ByteLevel()
            tk.add_special_tokens([AddedToken(t["content"], special=True, normalized=False)
                                   for t in definition.added if t["type"] == "control"])
        self.tk = tk

    def encode(self, text: "str | bytes", special: bool, add_special: bool) -> list[int]:
        self.tk.encode_special_tokens = not special
        return self.tk.encode(as_text(text), add_special_tokens=add_special).ids

    def decode(self, ids: list[int], skip_special: bool) -> str:
        return self.tk.decode(ids, skip_special_tokens=skip_special)


class ByteLevelTables(HFTokenizer):
    """On GGUF gpt2 tables: `tokenizers` for encode and str decode, and the exact bytes of a decode from
    the tables themselves through GPT-2's byte-to-unicode alphabet (charter's transcription of the
    published map), which a str decoder cannot give for a partial UTF-8 piece."""

    def __init__(self, definition):
        super().__init__(definition)
        self.tokens = definition.tokens
        self.types = {t["id"]: t["type"] for t in definition.added}
        self.byte_of = {ch: b for b, ch in _bytes_to_unicode().items()}

    def decode_bytes(self, ids: list[int], skip_special: bool) -> bytes:
        out = bytearray()
        for i in ids:
            if not 0 <= i < len(self.tokens):
                raise ValueError(f"id {i} is outside the tables [0, {len(self.tokens)})")
            kind = self.types.get(i, "normal")
            if kind == "control":
                if not skip_special:
                    out += self.tokens[i].encode("utf-8")
                continue
            out += bytes(self.byte_of[c] for c in self.tokens[i])
        return bytes(out)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map: printable Latin-1 bytes map to themselves,
    the other 68 bytes to U+0100 onward, in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class LlamaCppTokenizer:
    def __init__(self, gguf_path):
        import llama_cpp

        self.llm = llama_cpp.Llama(model_path=str(gguf_path), vocab_only=True, verbose=False)

    def encode(self, text: "str | bytes", special: bool, add_special: bool) -> list[int]:
        raw = text.encode("utf-8") if isinstance(text, str) else text  # llama.cpp takes bytes as they are
        return list(self.llm.tokenize(raw, add_bos=add_special, special=special))

    def decode(self, ids: list[int], skip_special: bool) -> bytes:
        return bytes(self.llm.detokenize(ids, special=not skip_special))

    def close(self) -> None:
        self.llm.close()
