"""The ground floor: errors, declared parameters, the block registry, the external
tools and the Verilog export. Everything else (hw, sw, sim, tb, synth, the command line)
stands on it; it imports none of them (the registry finds the blocks by name)."""
