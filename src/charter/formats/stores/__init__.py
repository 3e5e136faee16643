"""Embedded stores: byte formats that live inside one artifact tensor's extent.

Two kinds, from the Qwen4Exp design notes (AFN-002, AFN-003):

* `expert-major-v2`: routed-expert weights, one contiguous record per (layer, expert), with a
  component table (gate | up | down extents inside every record) and a record table.
* `ple-rows-v1`: a fixed-page row store for per-layer embeddings: a 512-byte manifest header, one
  SHA-256 per page, alignment padding, fixed-stride pages that each start with a 64-byte header.

The notes fix the facts (counts, shapes, codec group geometry, header sizes, digest domains), not a
byte layout; the layouts here are charter's choice, documented in docs/stores.md and marked
`structural` wherever a contract uses them.

Note [Store extents]
~~~~~~~~~~~~~~~~~~~~
Admission reads only a store's manifest region (its fixed header, its tables, and for the PLE
store the headers of the first and last page), never the records or pages: store tables are
bounded by the extent that holds them before any byte is read, and every offset is checked
against the extent with plain integer arithmetic (Python ints do not overflow; the bounds do the
work). Record and page digests are payload facts (`--verify-payload`).
"""

KINDS = ("expert-major-v2", "ple-rows-v1")
