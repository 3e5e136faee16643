"""What every codegen target shares, as LinkML's `generators/common/` (Note [Generated text]).

    text.py     the strings a generated literal may hold (no lone surrogate)
    python.py   Python literals and `#` comments
    cpp.py      C++ (and MSL) string literals, bools, int64s and `//` comments
    names.py    the one identifier and reserved-word policy of every target
    header.py   the `@generated` header of every generated file
    render.py   the Jinja2 environment policy and the normal form of generated text
    stages.py   the view of one stage function, which both checker targets render
    inputs.py   what a checker is generated from (the manifest's inputs of one contract)

Note [Generated text]
A contract never reaches generated code as source text: every string becomes a literal built by
the escaper of the target language (python.py, cpp.py), every comment goes through the sanitiser
of its comment syntax, every name through names.identifier, and every file starts with
header.generated_header. Target packages (codegen/python, cpp, labels, bindings, metal) build
typed views of ready-made literals from these, and their templates only loop and substitute:
a template never slices, filters, escapes or reformats a value, and calls no function.

One policy for every target: a lone surrogate (U+D800..U+DFFF) is refused (EscapeError, a
ValueError the CLI reports with exit 2), since no UTF-8 file or artifact can hold one and contracts
refuse them at load (charter.contract.yamlload); a control character is spelled by the language's own
escape, never written raw, so a literal never spans lines.
"""
