"""``sparseforge bench NAME`` benchmarks, one module each, discovered by the CLI."""
