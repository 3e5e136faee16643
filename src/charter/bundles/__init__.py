"""Bundles: a model folder or a GGUF split set admitted as one (docs/bundles.md)."""
