"""`charter mutate --html`: the page is well-formed, self-contained, states the summary line and
marks a survivor. Checked with the stdlib html.parser on hand-made outcomes (every verdict) and on
a real battery (the artifact side of the SmolLM2 contract)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from charter.diagnostics import Code, Stage
from charter.mutation import report
from charter.mutation.mutant import Expect, Mutant, Outcome, Verdict

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
EXTERNAL = re.compile(r"(?:https?:|ftp:|//)", re.I)


class Page(HTMLParser):
    """Checks nesting as it parses and collects what the assertions need."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.doctype = False
        self.cells: list[tuple[str, str]] = []  # (class, text) of every td with a class
        self._cell: list | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = self.doctype or decl.lower() == "doctype html"

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag in VOID:
            return
        self.stack.append(tag)
        if tag == "td" and attrs.get("class"):
            self._cell = [attrs["class"], ""]

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in VOID:
            self.errors.append(f"end tag for void element <{tag}>")
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
            return
        self.stack.pop()
        if tag == "td" and self._cell is not None:
            self.cells.append((self._cell[0], self._cell[1]))
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell[1] += data


def parse(page: str) -> Page:
    p = Page()
    p.feed(page)
    p.close()
    return p


def assert_well_formed_and_self_contained(page: str) -> Page:
    p = parse(page)
    assert p.doctype, "no <!doctype html>"
    assert not p.errors, p.errors[:5]
    assert p.stack == [], f"unclosed: {p.stack}"
    names = [t for t, _ in p.tags]
    assert names[:1] == ["html"] and names.count("html") == names.count("head") == names.count("body") == 1
    assert names.count("title") == 1
    assert any(t == "meta" and a.get("charset", "").lower() == "utf-8" for t, a in p.tags)
    for tag, attrs in p.tags:
        assert tag not in ("script", "link", "iframe", "object", "embed", "img"), f"<{tag}> on a self-contained page"
        for name in ("src", "href", "action", "data", "srcset"):
            value = attrs.get(name)
            assert value is None or not EXTERNAL.match(value.strip()), f"<{tag} {name}={value!r}>"
    css = "".join(re.findall(r"<style>(.*?)</style>", page, re.S))
    assert "url(" not in css and "@import" not in css
    return p


def _outcomes() -> list[Outcome]:
    def m(side, target, op, expect):
        return Mutant(side, target, op, expect)

    meta_value = Expect.of(Code.METADATA_VALUE, "metadata.llama.block_count")
    return [
        Outcome(m("artifact", "metadata.llama.block_count", "+1", meta_value), Verdict.KILLED, "metadata",
                "METADATA_VALUE", "metadata.llama.block_count"),
        Outcome(m("contract", "constants.heads", "+1", Expect(Stage.TENSORS)), Verdict.SURVIVED,
                detail="no generated check changed: the generator ignores this leaf"),
        Outcome(m("artifact", "tensors.output.weight", "rename", Expect.of(Code.TENSOR_MISSING)),
                Verdict.REGRESSION, "identity", "IDENTITY_MISMATCH", "identity.general.name", "wrong stage"),
        Outcome(m("contract", "description", "empty", None), Verdict.EQUIVALENT,
                detail="documentation: not a fact about the artifact <&>"),
        Outcome(m("artifact", "metadata", "reverse key order", None), Verdict.ADMITTED),
        Outcome(m("artifact", "metadata.general.alignment", "state the default", None), Verdict.REFUSED,
                "container", "CONTAINER_ALIGNMENT", "container.alignment"),
        Outcome(m("artifact", "header.version", "4", Expect(Stage.CONTAINER)), Verdict.ERROR,
                detail="ValueError: <script>alert(1)</script>"),
    ]


META = {"contract": "smollm2-135m-instruct-q4_1", "spec": "specs/artifacts/x.yaml",
        "artifact": "/tmp/a <b>.gguf", "seconds": 1.5}


def test_hand_made_outcomes_render_a_valid_page():
    outcomes = _outcomes()
    page = report.render_html(outcomes, META)
    p = assert_well_formed_and_self_contained(page)
    text = "".join(p.text)
    summary = report.summary(outcomes)
    assert not summary["passed"]
    assert report.summary_line(summary) in text
    assert "/tmp/a <b>.gguf" in text and "<b>.gguf" not in page  # escaped, shown as text
    assert "<script>alert(1)</script>" not in page
    classes = {c for c, _ in p.cells}
    assert {"killed", "survived", "regression", "equivalent", "admitted", "refused", "error"} <= classes
    assert any(c == "survived" and t.startswith("survived") for c, t in p.cells)
    assert re.search(r"<p class='summary fail'>", page)
    for line in report.failures(outcomes):
        assert line in text
    assert "SURVIVED contract:constants.heads:+1" in text


def test_a_passing_battery_is_marked_as_passing():
    outcomes = [o for o in _outcomes() if o.verdict.passes]
    page = report.render_html(outcomes, META)
    p = assert_well_formed_and_self_contained(page)
    assert report.summary(outcomes)["passed"]
    assert "class='summary pass'" in page
    assert not any(c in ("survived", "regression", "refused", "error") for c, _ in p.cells)
    assert "Failing mutants" not in "".join(p.text)


@pytest.fixture(scope="module")
def smollm2_artifact_battery(tmp_path_factory):
    """The artifact side of the SmolLM2 battery through the CLI (a few seconds)."""
    from charter.cli import main

    from tests.conftest import ROOT, smollm2_gguf

    assert smollm2_gguf().is_file(), "pinned checkpoint missing (make install: tools/checkpoints.txt)"
    out = tmp_path_factory.mktemp("html")
    html_path, json_path = out / "report.html", out / "report.json"
    code = main(["mutate", "--contract", str(ROOT / "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"),
                 "--only", "artifact", "-j", "2", "-q", "--html", str(html_path), "--json", str(json_path)])
    return code, html_path.read_text("utf-8"), json_path


@pytest.mark.slow  # the SmolLM2 battery's artifact side through the CLI
def test_real_battery_page(smollm2_artifact_battery, capsys):
    import json

    code, page, json_path = smollm2_artifact_battery
    data = json.loads(Path(json_path).read_text("utf-8"))
    p = assert_well_formed_and_self_contained(page)
    text = "".join(p.text)
    assert report.summary_line(data["summary"]) in text
    assert code == (0 if data["summary"]["passed"] else 1)
    killed = sum(o["verdict"] == "killed" for o in data["outcomes"])
    assert killed > 100
    assert sum(c == "killed" for c, _ in p.cells) > 0
    survivors = [o for o in data["outcomes"] if o["verdict"] == "survived"]
    assert any(c == "survived" for c, _ in p.cells) == bool(survivors)
    assert "smollm2-135m-instruct-q4_1" in text
