"""`charter freeze`: adapts its arguments to charter.freeze.freeze and its outcome to exit codes."""

from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    from charter.console import folder_arg, path_arg

    p = sub.add_parser("freeze", help="write model and artifact contracts that pin everything an artifact states")
    p.add_argument("artifact", type=path_arg, help="a known-good GGUF or safetensors file")
    p.add_argument("--id", required=True, help="id of the artifact contract (the model gets ID-model)")
    p.add_argument("-o", "--output", default=".", type=folder_arg, help="directory for models/ID-model.yaml and artifacts/ID.yaml")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.add_argument("--values", action="store_true",
                   help="also write the value policy the file meets (values: default: finite; reads every tensor)")
    p.set_defaults(func=run_freeze)


def run_freeze(args) -> int:
    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, current, print_diagnostics
    from charter.contract.paths import shown
    from charter.diagnostics import CharterError
    from charter.freeze import FreezeRefused, freeze

    try:
        written = freeze(Path(args.artifact), args.id, Path(args.output), force=args.force, values=args.values)
    except FreezeRefused as exc:
        print(f"charter: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CharterError as exc:  # the artifact itself is bad: rejected, as admission rejects it
        print_diagnostics(exc.diagnostics)
        return EXIT_REJECTED
    current().result = {"written": [shown(p) for p in written]}
    for path in written:
        current().say(f"wrote {shown(path)}")
    return EXIT_OK
