"""The text contract (`kind: text`): a model's tokenizer and chat template as pinned behaviour.

A text contract names where the tokenizer is defined (the GGUF tables of an artifact, or a
`tokenizer.json` inside a pinned package), pins its facts (model type, pre-tokenizer, vocabulary
and merges by digest, every added token, the effective vocabulary against the physical logits
rows), and lists cases: encode (text -> ids), decode (ids -> text or bytes), chat (messages ->
rendered text, its trust segments and their ids, or the exact error). Every case carries its
provenance class (Note [Text case classes] in charter.text.verify): `upstream_capture` is what the
pinned producer emits, `contract_control` is charter's own policy, stated with its rule.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field, JsonValue, StrictBool, StrictInt, StringConstraints, model_validator

from charter.contract.models import Header, Id, Sha256, Strict, located

CaseName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$")]
CaseClass = Literal["upstream_capture", "contract_control"]
HexBytes = Annotated[str, StringConstraints(pattern=r"^([0-9a-f]{2})*$", max_length=1 << 20)]
Version = Annotated[str, StringConstraints(pattern=r"^[0-9][0-9A-Za-z.+-]*$", max_length=64)]


class Producer(Strict):
    """An external implementation pinned by distribution and exact version."""

    package: str = Field(min_length=1, description="The distribution name (PyPI).")
    version: Version = Field(description="The exact version: a producer at another version is refused.")


class GGUFTables(Strict):
    """The tokenizer is the GGUF's own tables (tokenizer.ggml.*), read from the artifact contract's
    pinned file."""

    artifact: Id = Field(description="The artifact contract whose pinned GGUF holds the tables.")


class PackagedJson(Strict):
    """The tokenizer is a `tokenizer.json` inside an archive of a pinned package (the MiniLM wheel)."""

    package: str = Field(min_length=1, description="A pinned requirement, `name==version`.")
    archive: str = Field(min_length=1, description="The zip inside the installed distribution.")
    archive_sha256: Sha256 = Field(description="Digest of the archive's bytes.")
    archive_size: StrictInt = Field(ge=0, description="The archive's size in bytes.")
    member: str = Field(min_length=1, description="The tokenizer.json member of the archive.")
    sha256: Sha256 = Field(description="Digest of the member's bytes.")
    bundle: Id | None = Field(None, description="A bundle contract whose file of the same path must pin "
                                                "the same sha256.")


class Table(Strict):
    """A long table pinned by its entry count and the digest of its canonical JSON (Note [Table
    digests] in charter.text.tables)."""

    count: StrictInt = Field(ge=0, description="Entries in the table.")
    sha256: Sha256 = Field(description="Digest of the table's canonical JSON.")


class Logits(Strict):
    """Where the physical rows are: a tensor of an artifact contract, and its axis."""

    artifact: Id = Field(description="The artifact contract that holds the output projection.")
    tensor: str = Field(min_length=1, description="The output projection tensor.", examples=["token_embd.weight"])
    axis: StrictInt = Field(ge=0, description="The axis (in the container's order) of the rows.")
    rows: StrictInt = Field(ge=1, description="Physical rows (may exceed `ids`: padded rows are not tokens).")


GGUFTokenType = Literal["normal", "unknown", "control", "user_defined", "unused", "byte"]
JsonFlag = Literal["lstrip", "rstrip", "single_word", "normalized"]


class AddedToken(Strict):
    """One added or special token: id <-> content <-> flags, all three exact."""

    id: StrictInt = Field(ge=0, description="The token's id.")
    content: str = Field(description="The token's exact text.", examples=["<|im_start|>"])
    special: StrictBool = Field(description="The tokenizer marks it special.")
    type: GGUFTokenType | None = Field(None, description="GGUF tables: tokenizer.ggml.token_type of the id.")
    flags: list[JsonFlag] | None = Field(None, description="tokenizer.json: the flags that are true, in this order: "
                                                           "lstrip, rstrip, single_word, normalized.")


class TextTokenizer(Strict):
    model: str = Field(min_length=1, description="gpt2 (GGUF tokenizer.ggml.model), WordPiece (tokenizer.json model.type).")
    pre: str = Field(min_length=1, description="GGUF tokenizer.ggml.pre, or tokenizer.json pre_tokenizer.type.")
    vocab: Table = Field(description="The vocabulary: its entry count and digest.")
    merges: Table | None = Field(None, description="The BPE merges: count and digest (required for GGUF BPE).")
    config: dict[str, JsonValue] = Field(default_factory=dict, description=(
        "Every other fact of the definition, exactly: GGUF: the tokenizer.ggml scalar keys; tokenizer.json: "
        "normalizer, pre_tokenizer, post_processor, decoder, truncation, padding and the model's own keys."))
    ids: StrictInt = Field(ge=1, description="The effective vocabulary: ids with token semantics [0, ids).")
    logits: Logits = Field(description="Where the physical logits rows are.")
    added: list[AddedToken] = Field(description="Every added and special token, by id.")

    @model_validator(mode="after")
    def _added(self) -> "TextTokenizer":
        seen: set[int] = set()
        for i, t in enumerate(self.added):
            if t.id in seen or (i and t.id < self.added[i - 1].id):
                raise located(("added", i, "id"), f"added tokens are listed once each, by increasing id ({t.id})")
            seen.add(t.id)
            if t.id >= self.ids:
                raise located(("added", i, "id"), f"id {t.id} is outside the vocabulary [0, {self.ids})")
        if self.logits.rows < self.ids:
            raise located(("logits", "rows"), f"{self.logits.rows} physical rows cannot hold {self.ids} ids")
        return self


class Finding(Strict):
    """A documented disagreement: what a second implementation gives instead, and why."""

    by: Literal["crosscheck", "second_renderer"] = Field(description="Which implementation disagrees: the "
                                                                     "tokenizer cross-check or the second renderer.")
    ids: list[StrictInt] | None = Field(None, description="The ids it gives instead.")
    text: str | None = Field(None, description="The text it gives instead.")
    bytes: HexBytes | None = Field(None, description="The bytes (hex) it gives instead.")
    rendered: str | None = Field(None, description="The rendering it gives instead.")
    error: str | None = Field(None, description="The error it raises instead.")
    reason: str = Field(min_length=1, description="Why the two differ.")


class Case(Strict):
    name: CaseName = Field(description="The case's name, unique in the contract.", examples=["hello"])
    cls: CaseClass = Field(alias="class", description="`upstream_capture`: what the pinned producer emits; "
                                                      "`contract_control`: charter's own policy, stated with its "
                                                      "`rule`.")
    rule: str | None = Field(None, description="contract_control: the policy the case pins, in words.")
    findings: list[Finding] = Field(default_factory=list, description="Documented disagreements of a second "
                                                                      "implementation on this case.")

    @model_validator(mode="after")
    def _rule(self) -> "Case":
        if (self.cls == "contract_control") != (self.rule is not None):
            raise located(("rule",), "a contract_control states its rule, and only a contract_control has one")
        return self


class EncodeCase(Case):
    text: str | None = Field(None, description="The input text.")
    bytes: HexBytes | None = Field(None, description="The input as bytes, when it is not valid UTF-8.")
    special: StrictBool = Field(description="Parse special-token spellings in the text as their ids.")
    add_special: StrictBool = Field(description="Add the tokenizer's own specials (BOS, [CLS] ... [SEP]).")
    ids: list[StrictInt] | None = Field(None, description="The ids the input encodes to.")
    error: str | None = Field(None, description="contract_control: the policy's refusal.")

    @model_validator(mode="after")
    def _one(self) -> "EncodeCase":
        if (self.text is None) == (self.bytes is None):
            raise located(("text",), "an encode case states exactly one of text or bytes")
        if (self.ids is None) == (self.error is None):
            raise located(("ids",), "an encode case states exactly one of ids or error")
        return self

    @property
    def input(self) -> "str | bytes":
        return self.text if self.text is not None else bytes.fromhex(self.bytes)


class DecodeCase(Case):
    ids: list[StrictInt] = Field(description="The ids to decode.")
    skip_special: StrictBool = Field(description="Leave special tokens out of the text.")
    boundary: StrictBool = Field(False, description="A decode-boundary control: byte pieces, partial UTF-8, "
                                                    "skipped specials, ids at and past the vocabulary's end.")
    text: str | None = Field(None, description="The decoded text.")
    bytes: HexBytes | None = Field(None, description="The decoded bytes, when they are not valid UTF-8.")
    error: str | None = Field(None, description="contract_control: the policy's refusal.")

    @model_validator(mode="after")
    def _one(self) -> "DecodeCase":
        if sum(x is not None for x in (self.text, self.bytes, self.error)) != 1:
            raise located(("text",), "a decode case states exactly one of text, bytes or error")
        return self


class Segment(Strict):
    """One run of a rendered chat, by who authored it (Note [Trust segments] in charter.text.segments)."""

    data: str | None = Field(None, description="Caller text: tokenized without special-token parsing.")
    control: str | None = Field(None, description="Template-authored text: special-token atoms resolve.")

    @model_validator(mode="after")
    def _one(self) -> "Segment":
        if (self.data is None) == (self.control is None):
            raise ValueError("a segment is exactly one of data or control")
        if (self.data or self.control) == "":
            raise ValueError("a segment is not empty")
        return self

    @property
    def kind(self) -> str:
        return "data" if self.data is not None else "control"

    @property
    def text(self) -> str:
        return self.data if self.data is not None else self.control


class ContentPart(Strict):
    """One part of a structured message content, as a chat request sends it."""

    type: str = Field(min_length=1, description="The part's type.", examples=["text", "image_url"])
    text: str | None = Field(None, description="type text: the text.")
    image_url: JsonValue = Field(None, description="type image_url: the image reference, as the request sends it.")
    image: JsonValue = Field(None, description="type image: the image, as the request sends it.")


class Message(Strict):
    """One chat message of a request, as apply_chat_template receives it."""

    role: str = Field(description="Who speaks.", examples=["user"])
    content: Union[str, list[ContentPart], None] = Field(None, description="The text, or a list of typed parts.")
    tool_calls: list[JsonValue] | None = Field(None, description="assistant: the tool calls, as the request sends "
                                                                 "them.")
    tool_call_id: str | None = Field(None, description="tool: the call this message answers.")
    name: str | None = Field(None, description="The speaker's or tool's name.")


class ChatCase(Case):
    messages: list[Message] = Field(description="The request's messages.")
    tools: list[JsonValue] | None = Field(None, description="The request's tool definitions.")
    add_generation_prompt: StrictBool | None = Field(None, description="Unset: the contract's default.")
    kwargs: dict[str, JsonValue] = Field(default_factory=dict, description=(
        "Other template keyword arguments of the request (apply_chat_template's **kwargs): reasoning "
        "switches such as enable_thinking."))
    rendered: str | None = Field(None, description="The rendered text.")
    segments: list[Segment] | None = Field(None, description="The rendered text by author: data and control runs "
                                                             "that cover it exactly, in order.")
    ids: list[StrictInt] | None = Field(None, description="The segments tokenized by provenance, concatenated.")
    flattened_controls: StrictInt | None = Field(
        None, ge=0, description="Control ids a flat special-parsing tokenization of `rendered` would give: more "
                                "than the segments' is the promotion the segments prevent.")
    error: str | None = Field(None, description="The exact error: `Type: message` of the template, or the "
                                                "policy's refusal (contract_control).")

    @model_validator(mode="after")
    def _outcome(self) -> "ChatCase":
        rendered = (self.rendered, self.segments, self.ids, self.flattened_controls)
        if self.error is not None:
            if any(x is not None for x in rendered):
                raise located(("error",), "a failed render has no output: no rendered text, segments or ids")
            return self
        if any(x is None for x in rendered):
            raise located(("rendered",), "a chat case states rendered, segments, ids and flattened_controls, or error")
        for i in range(1, len(self.segments)):
            if self.segments[i].kind == self.segments[i - 1].kind:
                raise located(("segments", i), "adjacent segments of one kind are one segment")
        if "".join(s.text for s in self.segments) != self.rendered:
            raise located(("segments",), "the segments do not cover the rendered text exactly, in order")
        return self


class ChatPolicy(Strict):
    text_only: StrictBool = Field(description="Structured media parts (image, video, ...) are refused before rendering.")
    roles: list[str] = Field(min_length=1, description="The roles a request may use.")


class Chat(Strict):
    template_sha256: Sha256 = Field(description="sha256 of the template's UTF-8 text (GGUF tokenizer.chat_template).")
    semantics: Literal["transformers"] = Field(description="How the template is rendered: transformers' "
                                                           "apply_chat_template environment (charter.text.chat).")
    renderer: Producer = Field(description="The Jinja2 distribution the renderer runs on.")
    capture: Producer = Field(description="The pinned upstream renderer that `capture` runs.")
    second_renderer: Producer | None = Field(None, description="An independent engine every render is compared with.")
    variables: dict[str, JsonValue] = Field(default_factory=dict, description="Template variables every render gets "
                                                                              "(bos_token, eos_token).")
    defaults: dict[str, JsonValue] = Field(description="Defaults of the request flags (add_generation_prompt).")
    controls: list[str] = Field(min_length=1, description="The control atoms a control segment may resolve.")
    policy: ChatPolicy = Field(description="What a request may contain.")
    cases: list[ChatCase] = Field(description="The chat cases.")


class TextSource(Strict):
    """Where the tokenizer is defined: exactly one of the two."""

    gguf: GGUFTables | None = Field(None, description="The GGUF tables of an artifact contract's pinned file.")
    tokenizer_json: PackagedJson | None = Field(None, description="A tokenizer.json inside a pinned package.")

    @model_validator(mode="after")
    def _one(self) -> "TextSource":
        if (self.gguf is None) == (self.tokenizer_json is None):
            raise ValueError("a text source is exactly one of gguf or tokenizer_json")
        return self


class TextProducers(Strict):
    capture: Producer = Field(description="The pinned upstream tokenizer `capture` runs (an opt-in extra).")
    crosscheck: Producer | None = Field(None, description="The second implementation `verify` runs offline; "
                                                          "none: charter's own independent transcription.")


class TextContract(Header):
    kind: Literal["text"] = Field(description="`text`: a model's tokenizer and chat template as pinned behaviour.")
    model: Id = Field(description="The model contract the tokenizer belongs to.")
    source: TextSource = Field(description="Where the tokenizer is defined.")
    producers: TextProducers = Field(description="The pinned implementations that capture and cross-check the cases.")
    tokenizer: TextTokenizer = Field(description="The tokenizer's facts: model, tables, added tokens, vocabulary.")
    counts: dict[Literal["encode", "decode", "decode_boundary", "added", "chat", "chat_controls"], StrictInt] = Field(
        description="How many cases of each kind the contract holds: a dropped case is a changed count.")
    encode: list[EncodeCase] = Field(description="Encode cases: text (or bytes) -> ids.")
    decode: list[DecodeCase] = Field(description="Decode cases: ids -> text (or bytes).")
    chat: Chat | None = Field(None, description="The chat template and its cases: messages -> rendered text, trust "
                                                "segments and ids.")

    @model_validator(mode="after")
    def _cases(self) -> "TextContract":
        names: dict[str, tuple] = {}
        groups = [("encode", self.encode), ("decode", self.decode),
                  ("chat", "cases", self.chat.cases if self.chat else [])]
        for group in groups:
            *where, cases = group
            for i, case in enumerate(cases):
                if case.name in names:
                    raise located((*where, i, "name"), f"case {case.name!r} is already a case")
                names[case.name] = (*where, i)
        if self.source.gguf is not None and self.tokenizer.merges is None:
            raise located(("tokenizer", "merges"), "a GGUF BPE tokenizer pins its merges")
        for i, t in enumerate(self.tokenizer.added):
            if (t.type is None) != (self.source.gguf is None) or (t.flags is None) != (self.source.gguf is not None):
                raise located(("tokenizer", "added", i), "GGUF added tokens state `type`, tokenizer.json ones `flags`")
        if self.chat is not None:
            added = {t.content for t in self.tokenizer.added if t.special}
            for i, c in enumerate(self.chat.controls):
                if c not in added:
                    raise located(("chat", "controls", i), f"control {c!r} is not a special added token")
        return self

    def count_of(self, key: str) -> int:
        """The number of cases of one group, as `counts` states it."""
        chat = self.chat.cases if self.chat else []
        return {
            "encode": len(self.encode),
            "decode": len(self.decode),
            "decode_boundary": sum(c.boundary for c in self.decode),
            "added": len(self.tokenizer.added),
            "chat": sum(c.cls == "upstream_capture" for c in chat),
            "chat_controls": sum(c.cls == "contract_control" for c in chat),
        }[key]


def text_references(c: TextContract) -> list[tuple[tuple, str, str]]:
    """(path, id, kind) of every contract a text contract names, for the contract set to resolve."""
    refs = [(("model",), c.model, "model"), (("tokenizer", "logits", "artifact"), c.tokenizer.logits.artifact, "artifact")]
    if c.source.gguf is not None:
        refs.append((("source", "gguf", "artifact"), c.source.gguf.artifact, "artifact"))
    if c.source.tokenizer_json is not None and c.source.tokenizer_json.bundle is not None:
        refs.append((("source", "tokenizer_json", "bundle"), c.source.tokenizer_json.bundle, "bundle"))
    return refs
