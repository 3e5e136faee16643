"""The standard report in Stryker's own viewer, as one HTML file that needs no network.

Note [Vendored viewer]
~~~~~~~~~~~~~~~~~~~~~~
`mutation-testing-elements` 3.8.4 (npm, Apache-2.0, built against mutation-testing-report-schema
3.8.4, the version the report follows) is one web component, `<mutation-test-report-app>`,
shipped as the single script `dist/mutation-test-elements.js` (npm integrity
sha512-5CF1SNa7at5ZH33vEr+21wNebTSrtNIVvnzaUlxortHajOrIPaSLczIWvg6sI/fsExekQ7jookwf2cHftkckqQ==),
copied unchanged beside this module with its LICENSE. The page inlines the script as it is (it holds
neither `<script` nor `</script`, which alone could end or escape its element: `script_text` checks)
and the report with every `<` written `\\u003c` (the same JSON); the component shows a file tree,
filters by status and marks every mutant on its line of the contract's source.
"""

from __future__ import annotations

import html
from importlib import resources

SCRIPT = "mutation-test-elements.js"


def page(report_json: str, title: str) -> str:
    """A self-contained page showing `report_json` (the mutation-testing-report JSON)."""
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body>\n"
        f"<mutation-test-report-app title-postfix='{html.escape(title, quote=True)}'></mutation-test-report-app>\n"
        f"<script>{script_text()}</script>\n"
        "<script>document.querySelector('mutation-test-report-app').report = "
        f"{report_json.strip().replace('<', chr(92) + 'u003c')};</script>\n"
        "</body></html>\n"
    )


def script_text() -> str:
    """The vendored viewer, which must hold nothing that ends or escapes an inline script element."""
    script = resources.files("charter.mutation").joinpath("viewer", SCRIPT).read_text("utf-8")
    if "<script" in script.lower() or "</script" in script.lower():
        raise ValueError(f"{SCRIPT} holds a script tag: it cannot be inlined")
    return script
