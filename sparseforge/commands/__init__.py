"""Top-level ``sparseforge`` commands, one module each, discovered by the CLI."""
