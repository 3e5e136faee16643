"""`charter diff`: what an edit of the contracts does, leaf by leaf, and the gate CI runs on it.

Two versions of a contract set (two paths, or a git revision against the work tree,
charter.diff.sources) are paired by id, every changed leaf is found (charter.diff.leaves) and
classified by what it does to the generated checks and to the pinned artifacts (charter.diff.classify,
Note [Diff by checks]), with a stable rule id (charter.diff.rules); the allowlist
(charter.diff.allowlist) accepts named loosenings until they expire; charter.diff.render prints.

Note [Diff agreement]: tests/diff/test_agreement.py turns every contract mutant of the SmolLM2 and
Qwen4Exp contracts into an OLD/NEW pair and requires the diff's verdict to equal the battery's on
each: killed by admission <-> rejects the pinned artifact, killed by the contract language <-> NEW
does not load, equivalent with no check changed <-> no check changed, equivalent as a relaxation <->
checks changed and nothing rejected. What it proves: the diff finds the changed leaf, applies it
alone, resolves it, finds and admits the pinned artifact as the battery does, so the "rejects"
column of a diff is the battery's "killed" on every leaf the battery mutates. What it does not
prove: the diff and the battery share the check comparison (charter.mutation.expect.added_and_removed)
and the checker generator, so a change both miss (a leaf no check depends on when one should) is
missed by both, and agreement says nothing of it; the direction the diff gives a change (tightened
vs loosened, charter.diff.direction) has no battery counterpart and is tested on its own
(tests/diff/test_classify.py); the battery's prediction (charter.mutation.expect._evaluate) is not
used by the diff (it admits instead, Note [Admitted, not predicted]), but a killed mutant is
already one whose admission matched the prediction, so agreement adds nothing about the
prediction beyond the battery's own verdicts. Each mutant is one leaf, so the diff judges it with
NEW's whole plan (no other leaf touches the contract); applying one leaf of several to OLD alone
(charter.diff.classify._alone) is covered by tests/diff/test_command.py, not by the agreement.
The NEW documents are validated as the battery validates a mutant's (charter.mutation.run._reload,
which builds the contract a full validation builds), not re-read from YAML text.
"""
