"""An independent transcription of BERT's WordPiece pipeline, from the tokenizer.json facts alone.

The cross-check of the MiniLM cases: standard-library Python written from the published algorithm
(BERT's BasicTokenizer and WordpieceTokenizer, as the `tokenizers` BertNormalizer, BertPreTokenizer,
WordPiece model, TemplateProcessing and WordPiece decoder state them). It does not import
`tokenizers`, so a defect of that library and of this file are independent. Only the configuration
the MiniLM tokenizer.json has is supported; any other refuses to build (TEXT_TOKENIZER), rather
than guessing.
"""

from __future__ import annotations

import unicodedata

from charter.diagnostics import CharterError, Code, Diagnostic

# BERT's "Chinese character" blocks (CJK Unified Ideographs and their extensions, compatibility ideographs).
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_whitespace(c: str) -> bool:
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def _is_control(c: str) -> bool:
    if c in "\t\n\r":
        return False
    return unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn")


def _is_punctuation(c: str) -> bool:
    o = ord(c)
    if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_cjk(c: str) -> bool:
    o = ord(c)
    return any(a <= o <= b for a, b in _CJK)


class WordPiece:
    SUPPORTED = {
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    }

    def __init__(self, definition):
        cfg = definition.config
        for key, want in self.SUPPORTED.items():
            if cfg.get(key) != want:
                raise CharterError([Diagnostic(Code.TEXT_TOKENIZER, f"tokenizer.config.{key}",
                                               f"the WordPiece transcription supports {want}, not {cfg.get(key)}")])
        model = cfg["model"]
        self.unk = model["unk_token"]
        self.prefix = model["continuing_subword_prefix"]
        self.max_chars = model["max_input_chars_per_word"]
        self.vocab = {t: i for i, t in enumerate(definition.tokens)}
        self.tokens = definition.tokens
        self.added = {t["content"]: t["id"] for t in definition.added}
        self.special_ids = {t["id"] for t in definition.added if t["special"]}
        post = cfg["post_processor"]
        self.single = [p["SpecialToken"]["id"] if "SpecialToken" in p else None for p in post["single"]]
        trunc = cfg.get("truncation")
        self.max_length = trunc["max_length"] if trunc else None

    # --- encode ------------------------------------------------------------------------------

    def _normalize(self, text: str) -> str:
        text = "".join(" " if _is_whitespace(c) else c for c in text
                       if not (c == "\x00" or c == "\ufffd" or _is_control(c)))
        text = "".join(f" {c} " if _is_cjk(c) else c for c in text)
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        return text.lower()

    def _words(self, text: str) -> list[str]:
        words, current = [], []
        for c in text:
            if _is_whitespace(c):
                if current:
                    words.append("".join(current))
                current = []
            elif _is_punctuation(c):
                if current:
                    words.append("".join(current))
                words.append(c)
                current = []
            else:
                current.append(c)
        if current:
            words.append("".join(current))
        return words

    def _wordpiece(self, word: str) -> list[int]:
        if len(word) > self.max_chars:
            return [self.vocab[self.unk]]
        out, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    out.append(self.vocab[piece])
                    break
                end -= 1
            else:
                return [self.vocab[self.unk]]
            start = end
        return out

    def _split_added(self, text: str, special: bool) -> list[tuple[str, int | None]]:
        """Added tokens (not normalized) are matched on the raw text, leftmost longest first."""
        if not special or not self.added:
            return [(text, None)]
        pieces, pos, plain = [], 0, 0
        names = sorted(self.added, key=len, reverse=True)
        while pos < len(text):
            hit = next((n for n in names if text.startswith(n, pos)), None)
            if hit is None:
                pos += 1
                continue
            if plain < pos:
                pieces.append((text[plain:pos], None))
            pieces.append((hit, self.added[hit]))
            pos += len(hit)
            plain = pos
        if plain < len(text):
            pieces.append((text[plain:], None))
        return pieces

    def encode(self, text: "str | bytes", special: bool, add_special: bool) -> list[int]:
        if isinstance(text, bytes):  # as charter.text.engines.as_text: Python's replacement decoding
            text = text.decode("utf-8", "replace")
        ids: list[int] = []
        for piece, added in self._split_added(text, special):
            if added is not None:
                ids.append(added)
                continue
            for word in self._words(self._normalize(piece)):
                ids.extend(self._wordpiece(word))
        if add_special:
            extra = sum(1 for s in self.single if s is not None)
            if self.max_length is not None:
                ids = ids[:max(0, self.max_length - extra)]
            out: list[int] = []
            for s in self.single:
                out.extend(ids if s is None else [self.vocab[s] if s in self.vocab else self.added[s]])
            return out
        return ids if self.max_length is None else ids[:self.max_length]

    # --- decode ------------------------------------------------------------------------------

    def decode(self, ids: list[int], skip_special: bool) -> str:
        tokens = []
        for i in ids:
            if not 0 <= i < len(self.tokens):
                continue  # an id outside the vocabulary has no token: nothing is decoded for it
            if skip_special and i in self.special_ids:
                continue
            tokens.append(self.tokens[i])
        out = []
        for n, t in enumerate(tokens):  # the cleanup applies to each piece, after its joining space
            if n and t.startswith(self.prefix):
                t = t[len(self.prefix):]
            elif n:
                t = " " + t
            out.append(_cleanup(t))
        return "".join(out)


def _cleanup(s: str) -> str:
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                 (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        s = s.replace(a, b)
    return s
