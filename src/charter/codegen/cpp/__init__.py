"""C++ target: an artifact plan -> generated/cpp/<id>.hpp, a header-only admission checker.

`build.py` turns `charter.spec.checks.checks_of(plan)` (the one typed list of checks both
engines render) into C++ tables and statements; `templates/checker.hpp.jinja` only loops and
substitutes; `escape.py` is the one way a contract value becomes C++ text.
"""

from charter.codegen.cpp.build import render_cpp_checker, render_cpp_checkers

__all__ = ["render_cpp_checker", "render_cpp_checkers"]
