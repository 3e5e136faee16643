"""C++ target: an artifact plan -> generated/cpp/<id>.hpp, a header-only admission checker.

`build.py` turns `charter.contract.checks.checks_of(plan)` (the one typed list of checks both
engines render) into C++ tables and statements; `templates/checker.hpp.jinja` only loops and
substitutes; `literals.py` builds the runtime's own literals (rt::Int, rt::Lit) on the C++ escaper
every target shares (charter.codegen.common.cpp).
"""

from charter.codegen.cpp.build import render_cpp_checker, render_cpp_checkers

__all__ = ["render_cpp_checker", "render_cpp_checkers"]
