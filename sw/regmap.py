"""The accelerator's register map, defined once, and everything derived from it.

The host programs the accelerator (``accel``, issue 25) through an AXI4-Lite register
file of 32-bit registers. :data:`REGISTERS` is its one definition: each register's name,
byte offset, access, width, reset value and a line of description, and for the status
register its bit fields. From it come the hardware register file
(:class:`~sparseforge.hw.regfile.RegisterFile`), a C header (:func:`c_header`), the
README's table (:func:`markdown`), a JSON description (:func:`as_json`) and the host's
Python: :func:`writes` turns ``{name: value}`` into the ordered register writes of a run,
:func:`decode_status` reads the status word.

Access:

- ``RW``: written by the host, read back; an output of the register file.
- ``RO``: read by the host; an input of the register file (sampled when read).
- ``W1``: write one to pulse: a write with bit 0 set is a one-cycle pulse on the output
  (``start``); reads as 0.

A write while the accelerator is ``busy`` is refused: the register file answers SLVERR,
changes nothing, and sets the status register's sticky ``refused`` bit, which the next
accepted ``start`` clears. A write to an RO register is answered SLVERR; an offset where
no register is, DECERR.

The kernel codes are :class:`~sparseforge.sw.wire.AccelKernel`'s.
"""

import json
from dataclasses import dataclass

from ..core.errors import ParameterError
from . import wire

DATA_BITS = 32
"""Bits of a register and of the AXI4-Lite data bus."""

ACCESS = ("RW", "RO", "W1")


@dataclass(frozen=True)
class Field:
    """A bit field of a register: ``width`` bits from ``lsb``. ``own`` fields are kept by
    the register file itself (``refused``), the others are its inputs."""

    name: str
    lsb: int
    width: int
    doc: str
    own: bool = False


@dataclass(frozen=True)
class Register:
    """One 32-bit register: ``name``, byte ``offset``, ``access`` (:data:`ACCESS`), the
    ``width`` of its value (the upper bits read 0), its ``reset`` value, a line of ``doc``
    and, for a register of several values, its ``fields``."""

    name: str
    offset: int
    access: str
    width: int
    reset: int
    doc: str
    fields: tuple = ()


def _operand(offset, name, what):
    return (Register(f"{name}_base", offset, "RW", 32, 0, f"byte address of {what}"),
            Register(f"{name}_size", offset + 4, "RW", 32, 0, f"bytes of {what}"))


_KERNELS = ", ".join(f"{k.value} {k.name}" for k in wire.AccelKernel)

REGISTERS = (
    Register("status", 0x00, "RO", 4, 0, "the run's state (bit fields)", (
        Field("done", 0, 1, "the last run has finished and every write has landed"),
        Field("error", 1, 1, "the last run met an error (an AXI error response)"),
        Field("busy", 2, 1, "a run is going: writes are refused"),
        Field("refused", 3, 1, "a write came while busy and was refused (sticky; cleared "
                               "by the next start)", own=True))),
    Register("start", 0x04, "W1", 1, 0, "write 1 to start a run"),
    Register("kernel", 0x08, "RW", 3, 0, f"the kernel: {_KERNELS}; a matrix run is MM "
                                         "(SpMM) or MV (SpMV: b broadcast, the first PE "
                                         "column computing), a tensor run (a build of "
                                         "order 3) MTTKRP (SpMTTKRP), a run on a Gustavson "
                                         "build SPGEMM, on an Eureka build PRUNED_GEMM"),
    Register("cycles", 0x0C, "RO", 32, 0, "cycles of the last run (or of this one so far)"),
    Register("bytes_read", 0x10, "RO", 32, 0, "bytes read from memory by the last run"),
    Register("bytes_written", 0x14, "RO", 32, 0, "bytes written to memory by the last run"),
    Register("refetched", 0x18, "RO", 32, 0, "CISS entries the last run converted again for "
                                             "an overbooked Tailor (Tailors Sec. 3)"),
    *_operand(0x20, "a_rowptr", "A's row pointers (CSR), or a tensor's i ids (COO)"),
    *_operand(0x28, "a_colid", "A's column ids (CSR), or a tensor's j ids (COO)"),
    *_operand(0x30, "a_values", "A's values (CSR), or a tensor's (COO)"),
    *_operand(0x38, "b", "the dense operand B"),
    *_operand(0x40, "c", "the dense operand C (SpMTTKRP)"),
    *_operand(0x48, "out", "the output (SpGEMM: C's words, as the engine emits them)"),
    Register("tiles_base", 0x50, "RW", 32, 0, "byte address of the tile list"),
    Register("tiles_count", 0x54, "RW", 32, 0, "tiles in the tile list"),
    Register("passes", 0x58, "RW", 16, 0, "passes over B's columns, R columns a pass"),
    Register("b_panel", 0x5C, "RW", 32, 0, "bytes from one of B's panels of R columns to the next"),
    Register("out_panel", 0x60, "RW", 32, 0, "bytes from one of the output's panels to the next"),
    *_operand(0x64, "a_kid", "a tensor's k ids (COO, SpMTTKRP)"),
    Register("c_panel", 0x6C, "RW", 32, 0, "bytes from one of C's panels of R columns to the "
                                           "next (SpMTTKRP)"),
    Register("c_rows", 0x70, "RW", 17, 0, "C's rows, K, every tile loads (SpMTTKRP)"),
    Register("a_rows", 0x74, "RW", 17, 0, "A's rows, each column tile's C rows (SpGEMM)"),
    *_operand(0x78, "b_rowptr", "B's row pointers (CSR, SpGEMM)"),
    *_operand(0x80, "b_colid", "B's column ids (CSR, SpGEMM)"),
    *_operand(0x88, "b_values", "B's values (CSR, SpGEMM)"),
    *_operand(0x90, "out_rowlen", "C's row lengths, one a row of each column tile (SpGEMM)"),
    *_operand(0x98, "w_records", "W's SUDS block records, one a sent block (PRUNED_GEMM)"),
    *_operand(0xA0, "b_kept", "B's kept segment positions, a word a row of B (SpGEMM, HYTE)"),
    *_operand(0xA8, "tile_log", "the tile commands HYTE's controller sent, a word a tile "
                                "(SpGEMM, HYTE)"),
    Register("hyte_j", 0xB0, "RW", 17, 0, "B's columns, J, the controller tiles (SpGEMM, "
                                          "HYTE)"),
    Register("hyte_k", 0xB4, "RW", 17, 0, "A's columns, K, the controller tiles (SpGEMM, "
                                          "HYTE)"),
    *(Register(f"hyte_log_t{d}", 0xB8 + 4 * n, "RW", 5, 0,
               f"log2 of the first tile's extent along {d} (SpGEMM, HYTE)")
      for n, d in enumerate(wire.HYTE_DIMS)),
    Register("hyte_order", 0xC4, "RW", 3, 0, "the inter-tile order, an index of "
                                             f"{', '.join(wire.HYTE_ORDERS)} (SpGEMM, HYTE)"),
    Register("hyte_bufsize", 0xC8, "RW", 16, 0, "B's buffer in nonzeros, as the controller's "
                                                "tuning weighs it (SpGEMM, HYTE)"),
    Register("hyte_capacity", 0xCC, "RW", 16, 0, "the accessor's words given to B's tiles "
                                                 "(SpGEMM, HYTE)"),
)

STATUS = "status"
"""The register of the run's state, whose ``refused`` bit the register file keeps."""


def check(registers=REGISTERS):
    """Raise :class:`~sparseforge.core.errors.ParameterError` unless ``registers`` is a
    well-formed map: unique names (fields included), aligned unique offsets, widths and
    resets that fit, fields inside their register and apart."""
    names, offsets = set(), set()
    for r in registers:
        where = f"register {r.name}"
        for name in (r.name, *(f.name for f in r.fields)):
            if name in names:
                raise ParameterError(f"{where}: the name {name!r} is used twice")
            names.add(name)
        if r.offset % 4 or r.offset in offsets:
            raise ParameterError(f"{where}: offset {r.offset:#x} is unaligned or taken")
        offsets.add(r.offset)
        if r.access not in ACCESS or not 1 <= r.width <= DATA_BITS or r.reset >> r.width:
            raise ParameterError(f"{where}: access {r.access}, width {r.width} or reset "
                                 f"{r.reset} out of range")
        used = 0
        for f in r.fields:
            bits = ((1 << f.width) - 1) << f.lsb
            if f.lsb + f.width > r.width or used & bits:
                raise ParameterError(f"{where}: field {f.name} outside it or overlapping")
            used |= bits


check()


def by_name(registers=REGISTERS):
    return {r.name: r for r in registers}


def span(registers=REGISTERS):
    """Bytes of address space the map needs (a power of two)."""
    end = max(r.offset for r in registers) + 4
    return 1 << (end - 1).bit_length()


def writes(values, registers=REGISTERS):
    """The register writes ``[(offset, value), ...]`` that program a run with ``values``
    (``{name: value}``, RW registers only), in offset order, then the write of one to
    ``start``. A name that is not an RW register, or a value that does not fit its
    width, raises :class:`~sparseforge.core.errors.ParameterError`."""
    regs = by_name(registers)
    out = []
    for name, value in values.items():
        r = regs.get(name)
        if r is None or r.access != "RW":
            known = ", ".join(x.name for x in registers if x.access == "RW")
            raise ParameterError(f"register {name!r} is not one the host writes "
                                 f"(known: {known})")
        if not isinstance(value, int) or value < 0 or value >> r.width:
            raise ParameterError(f"register {name}={value!r}: expected an integer in "
                                 f"[0, {(1 << r.width) - 1}]")
        out.append((r.offset, value))
    starts = [r for r in registers if r.access == "W1"]
    return sorted(out) + [(r.offset, 1) for r in starts]


def decode_status(word, registers=REGISTERS):
    """The status register's fields from its 32-bit ``word``: ``{field: value}``."""
    return {f.name: (word >> f.lsb) & ((1 << f.width) - 1)
            for f in by_name(registers)[STATUS].fields}


def _macro(name):
    return "SPARSEFORGE_" + name.upper()


def c_header(registers=REGISTERS):
    """A C header: each register's offset, each field's shift and mask, as ``#define`` s."""
    lines = ["/* sparseforge accelerator registers (AXI4-Lite, 32-bit). Generated from",
             " * sw/regmap.py by `sparseforge regs --c`; do not edit. */",
             "#ifndef SPARSEFORGE_REGS_H", "#define SPARSEFORGE_REGS_H", ""]
    for r in registers:
        lines.append(f"#define {_macro(r.name) + '_OFFSET':40} 0x{r.offset:02X}u  "
                     f"/* {r.access}: {r.doc} */")
        for f in r.fields:
            base = _macro(f"{r.name}_{f.name}")
            lines.append(f"#define {base + '_SHIFT':40} {f.lsb}u")
            lines.append(f"#define {base + '_MASK':40} 0x{((1 << f.width) - 1) << f.lsb:X}u"
                         f"  /* {f.doc} */")
    return "\n".join([*lines, "", "#endif", ""])


def markdown(registers=REGISTERS):
    """The README's table: one row a register, its fields in its description."""
    rows = ["| offset | register | access | bits | reset | description |",
            "| --- | --- | --- | --- | --- | --- |"]
    for r in registers:
        doc = r.doc
        if r.fields:
            doc += ": " + "; ".join(f"bit {f.lsb} `{f.name}`, {f.doc}" for f in r.fields)
        rows.append(f"| 0x{r.offset:02X} | `{r.name}` | {r.access} | {r.width} | "
                    f"{r.reset} | {doc} |")
    return "\n".join(rows) + "\n"


def as_json(registers=REGISTERS):
    """The map as one JSON object: ``{"data_bits": 32, "registers": [...]}``."""
    return json.dumps({"data_bits": DATA_BITS, "registers": [
        {"name": r.name, "offset": r.offset, "access": r.access, "width": r.width,
         "reset": r.reset, "doc": r.doc,
         "fields": [vars(f) for f in r.fields]} for r in registers]})
