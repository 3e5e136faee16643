"""charter: YAML contracts that make an ML model artifact impossible to quietly become the wrong model."""

__version__ = "0.1.0"
