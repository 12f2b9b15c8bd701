"""Small real data files shipped with the package (see README.md here)."""
