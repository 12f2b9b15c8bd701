"""The exceptions sparseforge raises for users.

Every error a user can cause (bad parameter, malformed file, illegal request)
is one of these types, so the command line can print it as one line instead of
a traceback. Messages say what was wrong and where.
"""


class SparseforgeError(Exception):
    """Base class for every error that is the user's to fix."""


class ParameterError(SparseforgeError, ValueError):
    """A generator or tool parameter is unknown or out of its allowed range."""


class FormatError(SparseforgeError, ValueError):
    """An input file is malformed.

    Parameters
    ----------
    path : file the problem is in.
    message : what is wrong.
    line : 1-based line number, where the problem is on one line.
    """

    def __init__(self, path, message, line=None):
        self.path = str(path)
        self.line = line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


class ToolError(SparseforgeError, RuntimeError):
    """An external tool (Verilator, Yosys, nextpnr) failed or is missing."""


class ToolStopped(ToolError):
    """A tool stopped by its caller's ``stop`` rule; ``seconds`` is ``(wall, cpu)`` it ran."""

    def __init__(self, message, seconds):
        self.seconds = seconds
        super().__init__(message)
