"""Pure PyTorch building blocks of skdiff (no scikit-learn in here): one concept per file."""

__all__: list[str] = []
