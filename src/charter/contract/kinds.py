"""Every contract kind by its `kind:` name (the bundle, text and regions kinds live in their own
packages: charter.bundles.contract, charter.text.contract, charter.regions.contract)."""

from __future__ import annotations

from typing import Union

from charter.bundles.contract import BundleContract
from charter.contract.models import ArtifactContract, Header, KernelContract, ModelContract, ProvenanceContract
from charter.regions.contract import RegionsContract
from charter.text.contract import TextContract

CONTRACT_KINDS: dict[str, type[Header]] = {
    "model": ModelContract,
    "artifact": ArtifactContract,
    "provenance": ProvenanceContract,
    "kernel": KernelContract,
    "bundle": BundleContract,
    "text": TextContract,
    "regions": RegionsContract,
}

Contract = Union[ModelContract, ArtifactContract, ProvenanceContract, KernelContract, BundleContract, TextContract,
                 RegionsContract]
