"""Top-level designs wired only through public interfaces and ``wiring.connect``."""
