"""The battery's HTML page in headless Chromium (Note [Vendored viewer]): Stryker's viewer renders the
standard report of the real SmolLM2 battery, filtering by Survived shows the one survivor, on the
line of its contract fact, and a screenshot shows it marked.

Run by `make test-viewer` (which installs Debian's chromium when it is missing), not by `make test`.
The survivor is written into the real battery's outcomes (a killed contract mutant turned into
`survived`, as a leaf the checker ignored would be): the battery itself passes on the shipped
contracts, so a real survivor needs a broken checker."""

from __future__ import annotations

import dataclasses
import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from charter.diagnostics import Location
from charter.mutation import report
from charter.mutation.mutant import Verdict
from tests.conftest import ROOT

pytestmark = pytest.mark.viewer

SPEC = "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=20000", "--window-size=1400,1000"]

# Run in the page once the viewer has rendered: keep only Survived in the status filter, bring the
# survivor into view, and write what the page shows into the light DOM for --dump-dom to print.
PROBE = """
<script>
function deep(root, sel) {
  const out = [];
  const walk = (n) => { out.push(...n.querySelectorAll(sel)); for (const c of n.querySelectorAll('*')) if (c.shadowRoot) walk(c.shadowRoot); };
  walk(root); return out;
}
setTimeout(() => {
  const seen = {};
  for (const box of deep(document, 'mte-state-filter input[type=checkbox]')) {
    if (box.checked !== (box.id === 'filter-Survived')) box.click();
  }
  setTimeout(() => {
    const code = deep(document, '#report-code-block')[0];
    seen.selected = code ? [...code.classList].filter(c => c.startsWith('mte-selected-')).sort() : null;
    seen.survivors = deep(document, 'span.mutant.Survived').map(s => {
      const rows = [...s.closest('table').querySelectorAll('tr.line')];
      s.scrollIntoView({block: 'center'});
      return {id: s.dataset.mutantId, line: rows.indexOf(s.closest('tr')) + 1};
    });
    seen.killed = deep(document, 'span.mutant.Killed').length;
    const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(seen);
    document.body.appendChild(pre);
  }, 1000);
}, 6000);
</script>
"""


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("no chromium on PATH: `make test-viewer` installs Debian's chromium")
    return path


@pytest.fixture(scope="module")
def page(tmp_path_factory, smollm2_path):
    """The real battery's contract side with one survivor, as --html writes it, and the survivor."""
    root = tmp_path_factory.mktemp("viewer")
    subprocess.run([str(ROOT / ".venv/bin/charter"), "mutate", "--contract", SPEC, "--artifact", str(smollm2_path),
                    "--only", "contract", "-j", "2", "-q", "--report", str(root / "battery.json")],
                   check=True, cwd=ROOT, capture_output=True)
    outcomes, meta = report.from_json((root / "battery.json").read_text("utf-8"))
    i = next(i for i, o in enumerate(outcomes) if o.verdict is Verdict.KILLED and o.location.startswith(SPEC))
    survivor = outcomes[i] = dataclasses.replace(outcomes[i], verdict=Verdict.SURVIVED, stage=None, code=None,
                                                 field=None, detail="admitted")
    html = report.render_html(outcomes, meta)
    (root / "battery.html").write_text(html, "utf-8")
    (root / "probe.html").write_text(html.replace("</body>", PROBE + "</body>"), "utf-8")
    return root, survivor


def _url(root: Path, name: str) -> str:
    # The viewer names files from their common folder (specs/): the artifact contract is artifacts/...
    return f"{(root / name).as_uri()}#mutant/artifacts/{Path(SPEC).name}"


def test_filtering_by_survived_shows_the_survivor_on_its_contract_line(chromium, page):
    root, survivor = page
    dom = subprocess.run([chromium, *FLAGS, "--dump-dom", _url(root, "probe.html")], capture_output=True,
                         text=True, timeout=120).stdout
    assert '<pre id="probe">' in dom, "the viewer did not render"
    seen = json.loads(dom.split('<pre id="probe">', 1)[1].split("</pre>", 1)[0].replace("&quot;", '"'))
    assert "mte-selected-Survived" in seen["selected"]  # and Pending, which has no mutant and no box
    assert not {"mte-selected-Killed", "mte-selected-Ignored", "mte-selected-NoCoverage"} & set(seen["selected"])
    assert seen["survivors"] == [{"id": survivor.mutant.id, "line": Location.parse(survivor.location).line}]
    assert seen["killed"] > 100  # the killed mutants are there, filtered out


def test_screenshot_marks_the_survivor(chromium, page):
    root, _ = page
    shot = root / "survivor.png"
    subprocess.run([chromium, *FLAGS, f"--screenshot={shot}", _url(root, "probe.html")], capture_output=True,
                   timeout=120, check=True)
    width, height, rows = _rgb(shot.read_bytes())
    assert (width, height) == (1400, 1000)
    # The viewer marks a survivor with a red dot after its fact and a red underline: red pixels in
    # the source below the filter bar (with only Survived selected, no other mark is drawn there)
    code = [px for y, row in enumerate(rows) if y > height // 2 for px in row]
    reds = sum(1 for r, g, b in code if r > 180 and g < 90 and b < 90)
    assert reds > 20, f"{reds} red pixels in the source: no survivor marked on the screenshot"


def _rgb(png: bytes) -> tuple[int, int, list[list[tuple[int, int, int]]]]:
    """Width, height and rows of RGB pixels of an 8-bit RGB or RGBA non-interlaced PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    step = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * step
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - step] if x >= step else 0
            b, c = prev[x], prev[x - step] if x >= step else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, [[tuple(r[x:x + 3]) for x in range(0, stride, step)] for r in rows]
