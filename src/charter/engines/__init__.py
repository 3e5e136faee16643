"""The two admission engines, and the choice of the checker each runs.

* `charter.engines.python` -- the generated Python checker, run by charter.admission.runtime.
* `charter.engines.cpp` -- the generated C++ checker, compiled into charter._native or into a
  checker library (`charter.engines.library`); it is handed the header and asks for the rest.
* `charter.engines.choose` -- Note [Choosing a checker]: committed, compiled in, cached or
  freshly rendered.

Both engines take one `Options` and give one `Verdict`, so `--engine both` and the differential
tests compare like with like. Engines use codegen's render functions; codegen never imports them.
"""

from charter.engines.options import Options
from charter.engines.verdict import Verdict, disagreement

__all__ = ["Options", "Verdict", "disagreement"]
