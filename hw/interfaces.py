"""The named interfaces blocks connect through, with their payload layouts.

Each is a ``wiring.Signature`` (class) whose docstring states the protocol
it promises; payload layouts come from the wire formats in
:mod:`sparseforge.sw.wire`, so host encoders and testbenches pack the same
bits. A block declares ``In(BuffetSignature(...))`` or ``Out(...)`` and a
composite joins two with ``wiring.connect``.
"""

from amaranth.lib import data


def struct(fields):
    """The ``StructLayout`` of a record of :class:`~sparseforge.sw.wire.Field` s."""
    return data.StructLayout({f.name: f.width for f in fields})
