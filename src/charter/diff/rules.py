"""The diff's rule ids: stable names in four categories, as `buf breaking` names its rules.

A rule id is an interface: CI logs, allowlist entries and scripts name it, so an id is never
renamed or reused; docs/mutation.md ("The diff gate") documents each. The category decides the
exit code: a loosening or an identity change fails the gate unless an allowlist entry allows it.
"""

from __future__ import annotations

from enum import Enum


class Category(str, Enum):
    TIGHTEN = "tightened"
    LOOSEN = "loosened"
    IDENTITY = "identity"
    EQUIVALENT = "equivalent"

    @property
    def fails(self) -> bool:
        """Whether a finding of this category fails the gate (unless allowed)."""
        return self in (Category.LOOSEN, Category.IDENTITY)


class Rule(str, Enum):
    """Each member's value is its id; `category` and `meaning` are what docs/mutation.md states."""

    EQUIVALENT_NO_CHECK_CHANGED = "EQUIVALENT_NO_CHECK_CHANGED"
    EQUIVALENT_DOCUMENTATION = "EQUIVALENT_DOCUMENTATION"
    TIGHTEN_CHECK_ADDED = "TIGHTEN_CHECK_ADDED"
    TIGHTEN_CHECK_NARROWED = "TIGHTEN_CHECK_NARROWED"
    TIGHTEN_REJECTS_PINNED = "TIGHTEN_REJECTS_PINNED"
    TIGHTEN_CONTRACT_ADDED = "TIGHTEN_CONTRACT_ADDED"
    LOOSEN_CHECK_REMOVED = "LOOSEN_CHECK_REMOVED"
    LOOSEN_CHECK_WIDENED = "LOOSEN_CHECK_WIDENED"
    LOOSEN_CHECK_CHANGED = "LOOSEN_CHECK_CHANGED"
    LOOSEN_CONTRACT_REMOVED = "LOOSEN_CONTRACT_REMOVED"
    LOOSEN_UNCLASSIFIED_KIND = "LOOSEN_UNCLASSIFIED_KIND"
    IDENTITY_MODEL_ID = "IDENTITY_MODEL_ID"
    IDENTITY_ARCHITECTURE = "IDENTITY_ARCHITECTURE"
    IDENTITY_FAMILY = "IDENTITY_FAMILY"
    IDENTITY_MODEL_SOURCE = "IDENTITY_MODEL_SOURCE"
    IDENTITY_ARTIFACT_MODEL = "IDENTITY_ARTIFACT_MODEL"
    IDENTITY_CONTRACT_ID = "IDENTITY_CONTRACT_ID"

    @property
    def category(self) -> Category:
        return _CATEGORY[self.value.split("_", 1)[0]]

    @property
    def meaning(self) -> str:
        return MEANINGS[self]


_CATEGORY = {"EQUIVALENT": Category.EQUIVALENT, "TIGHTEN": Category.TIGHTEN, "LOOSEN": Category.LOOSEN,
             "IDENTITY": Category.IDENTITY}

MEANINGS = {
    Rule.EQUIVALENT_NO_CHECK_CHANGED: "no generated check of any artifact contract changed",
    Rule.EQUIVALENT_DOCUMENTATION: "a `description` of a contract kind the diff does not classify by checks",
    Rule.TIGHTEN_CHECK_ADDED: "generated checks were added, none removed or replaced; the pinned artifact (if any) "
                              "is still admitted",
    Rule.TIGHTEN_CHECK_NARROWED: "a check now admits a subset of what it admitted (fewer stop ids, an extra-key "
                                 "policy from allow to reject, more forbidden keys, fewer excluded patterns)",
    Rule.TIGHTEN_REJECTS_PINNED: "the checker generated from NEW rejects a pinned artifact that OLD admits",
    Rule.TIGHTEN_CONTRACT_ADDED: "a contract NEW has and OLD does not",
    Rule.LOOSEN_CHECK_REMOVED: "generated checks were removed and none added: the checker checks less",
    Rule.LOOSEN_CHECK_WIDENED: "a check now admits a superset of what it admitted (more stop ids, extra keys "
                               "allowed, fewer forbidden keys, more excluded patterns)",
    Rule.LOOSEN_CHECK_CHANGED: "a check's literals changed and the pinned artifact is still admitted (or none is "
                               "pinned): the diff cannot show NEW rejects everything OLD rejects, so it fails closed",
    Rule.LOOSEN_CONTRACT_REMOVED: "a contract OLD has and NEW does not: nothing checks its artifacts any more",
    Rule.LOOSEN_UNCLASSIFIED_KIND: "a leaf of a kernel, provenance, text, bundle or regions contract: the diff "
                                   "classifies artifact checks only, so it fails closed",
    Rule.IDENTITY_MODEL_ID: "a model contract's `id` changed",
    Rule.IDENTITY_ARCHITECTURE: "a model's `architecture` changed",
    Rule.IDENTITY_FAMILY: "a model's `family` changed",
    Rule.IDENTITY_MODEL_SOURCE: "a model's upstream `source` (repository, revision) changed",
    Rule.IDENTITY_ARTIFACT_MODEL: "an artifact contract names another model",
    Rule.IDENTITY_CONTRACT_ID: "an artifact contract's `id` changed (the same file states another id)",
}

# Identity facts (Note [Identity leaves] in charter.diff.classify): (kind, leaf path prefix) -> rule.
IDENTITY_LEAVES = {
    ("model", ("id",)): Rule.IDENTITY_MODEL_ID,
    ("model", ("architecture",)): Rule.IDENTITY_ARCHITECTURE,
    ("model", ("family",)): Rule.IDENTITY_FAMILY,
    ("model", ("source", "repository")): Rule.IDENTITY_MODEL_SOURCE,
    ("model", ("source", "revision")): Rule.IDENTITY_MODEL_SOURCE,
    ("artifact", ("model",)): Rule.IDENTITY_ARTIFACT_MODEL,
    ("artifact", ("id",)): Rule.IDENTITY_CONTRACT_ID,
}


def identity_rule(kind: str, path: tuple) -> Rule | None:
    """The identity rule of a leaf that is, holds or lies below an identity fact (`source` dropped
    whole drops its repository)."""
    path = tuple(path)
    for (k, fact), rule in IDENTITY_LEAVES.items():
        n = min(len(fact), len(path))
        if k == kind and path and fact[:n] == path[:n]:
            return rule
    return None
