"""``sparseforge run``: a workload through a generated accelerator, simulated natively on
Verilator, one accelerator per module."""
