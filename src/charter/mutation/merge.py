"""`charter mutate merge SHARD.json…`: the shards of one battery, put back into one report.

Note [Shards that merge]
~~~~~~~~~~~~~~~~~~~~~~~~
A shard run (`--shard K/N`, Note [Shards] in charter.mutation.shard) writes its report with the
same `--report` as a whole run: its outcomes, in battery order, and the whole run's meta plus one
key, `shard`: {index, count, total, positions}. Merging reads each shard back through
`report.from_json` (the inverse of `report.to_json`, whatever format it writes), checks that the
shards are one complete, disjoint set of one run, puts every outcome at its position and writes
`report.to_json(outcomes, meta)` with the meta stripped of `shard`. The summary is computed
again from the outcomes, so the merged bytes are the bytes a whole run writes, in any format
whose to_json is a function of (outcomes, meta).

That needs a report to hold nothing that differs between two runs of the same battery: the
elapsed time is not in it (stdout prints it; a merge would have to invent a sum that no whole
run would write), nor how many verdicts came from the cache (stdout says that too).

"One run" is decided by the meta: every shard must carry the same meta but for `shard`, and so
the same digests (charter.mutation.digests: the contract files read, the artifact's header bytes
and size, the rendered checker, charter's version and sources, the ordered ids of all the
battery's mutants, the engine), the same shard count and total. The set must hold every index
once, and the positions must partition the battery; the ids of the merged outcomes, in order,
must then hash to the meta's `mutants` digest.
"""

from __future__ import annotations

from pathlib import Path

from charter.mutation import report
from charter.mutation.digests import mutant_ids
from charter.mutation.mutant import Outcome


class MergeError(Exception):
    """A set of shards that is not one whole run: a user's mistake (exit 2), said in one line."""


def merge(texts: dict[str, str]) -> tuple[list[Outcome], dict]:
    """(outcomes, meta) of the whole run whose shard reports are `texts` (name -> text)."""
    if not texts:
        raise MergeError("no shard reports to merge")
    shards = []
    for name, text in texts.items():
        try:
            outcomes, meta = report.from_json(text)
        except ValueError as exc:
            raise MergeError(f"{name}: {exc}") from None
        shard = meta.get("shard")
        if not _is_shard(shard, len(outcomes)):
            raise MergeError(f"{name}: not the report of a shard run (`charter mutate --shard K/N --report FILE`)")
        shards.append((name, outcomes, meta, shard))
    first_name, _, first_meta, first_shard = shards[0]
    common = {k: v for k, v in first_meta.items() if k != "shard"}
    by_index: dict[int, str] = {}
    for name, outcomes, meta, shard in shards:
        rest = {k: v for k, v in meta.items() if k != "shard"}
        if rest != common:
            key = next(k for k in sorted(set(rest) | set(common)) if rest.get(k) != common.get(k))
            what = _differs(key, rest.get(key), common.get(key))
            raise MergeError(f"{name} and {first_name} are shards of different runs: {what}")
        if (shard["count"], shard["total"]) != (first_shard["count"], first_shard["total"]):
            raise MergeError(f"{name} is shard {shard['index']}/{shard['count']} of {shard['total']} mutants, "
                             f"{first_name} is {first_shard['index']}/{first_shard['count']} of {first_shard['total']}")
        if shard["index"] in by_index:
            raise MergeError(f"{name} and {by_index[shard['index']]} are both shard {shard['index']}/{shard['count']}")
        by_index[shard["index"]] = name
    count, total = first_shard["count"], first_shard["total"]
    missing = [k for k in range(count) if k not in by_index]
    if missing:
        raise MergeError(f"incomplete: shard{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(f'{k}/{count}' for k in missing)} missing")
    merged: list[Outcome | None] = [None] * total
    for name, outcomes, _, shard in shards:
        for position, outcome in zip(shard["positions"], outcomes):
            if merged[position] is not None:
                raise MergeError(f"{name} overlaps another shard at mutant {position} ({outcome.mutant.id})")
            merged[position] = outcome
    if any(o is None for o in merged):
        raise MergeError(f"incomplete: {sum(o is None for o in merged)} of {total} mutants are in no shard")
    digests = common.get("digests") or {}
    if "mutants" in digests and mutant_ids([o.mutant.id for o in merged]) != digests["mutants"]:
        raise MergeError("the shards' outcomes are not the battery's mutants in its order (a shard report was edited)")
    return merged, common  # type: ignore[return-value]


def _is_shard(shard, outcomes: int) -> bool:
    if not isinstance(shard, dict):
        return False
    count, index, total, positions = (shard.get(k) for k in ("count", "index", "total", "positions"))
    ints = all(type(v) is int for v in (count, index, total))
    return (ints and 0 <= index < count and isinstance(positions, list) and len(positions) == outcomes
            and all(type(p) is int and 0 <= p < total for p in positions))


def _differs(key: str, a, b) -> str:
    if key == "digests" and isinstance(a, dict) and isinstance(b, dict):
        which = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return "another " + ", ".join(which) + " (digests differ)"
    return f"{key} {a!r} vs {b!r}"


def run_merge(args) -> int:
    """`charter mutate merge`: exit 0 when the merged battery passes, 1 when it fails, 2 when the
    shards are not one whole run."""
    import sys

    from charter.console import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, not_a_file, print_or_write

    texts = {}
    for name in args.shards:
        try:
            texts[name] = Path(name).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = not_a_file(Path(name)) if isinstance(exc, OSError) else "not UTF-8 text"
            print(f"charter: {name}: {reason}", file=sys.stderr)
            return EXIT_USAGE
    try:
        outcomes, meta = merge(texts)
    except MergeError as exc:
        print(f"charter: cannot merge: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.report:
        print_or_write(args.report, report.to_json(outcomes, meta))
    if args.html:
        print_or_write(args.html, report.render_html(outcomes, meta))
    s = report.summary(outcomes)
    for line in report.failures(outcomes):
        print(line)
    print(report.table(outcomes))
    print(f"{report.summary_line(s)} (merged from {len(texts)} shards)")
    return EXIT_OK if s["passed"] else EXIT_REJECTED
