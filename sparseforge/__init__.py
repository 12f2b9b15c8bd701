"""sparseforge: verified building blocks for sparse tensor accelerators."""
