"""Every contract kind by its `kind:` name (the bundle kind lives in charter.bundles.contract)."""

from __future__ import annotations

from typing import Union

from charter.bundles.contract import BundleContract
from charter.contract.models import ArtifactContract, Header, KernelContract, ModelContract, ProvenanceContract
from charter.regions.contract import RegionsContract

CONTRACT_KINDS: dict[str, type[Header]] = {
    "model": ModelContract,
    "artifact": ArtifactContract,
    "provenance": ProvenanceContract,
    "kernel": KernelContract,
    "bundle": BundleContract,
    "regions": RegionsContract,
}

Contract = Union[ModelContract, ArtifactContract, ProvenanceContract, KernelContract, BundleContract, RegionsContract]
