"""nnrt's exceptions. Each carries nnrt's own message (which names the file, op or tensor and
what was expected)."""


class Error(Exception):
    """Base class of every error nnrt raises (an internal error, a bug to report, is raised as
    this class itself)."""


class LoadError(Error):
    """The model (or a custom-op / device library) could not be read or is not valid."""


class PrepareError(Error):
    """Partitioning, compiling kernels or planning memory failed (an op no backend takes, a
    missing plugin or device driver, a backend that cannot be used)."""


class RunError(Error):
    """The run failed: a kernel error, a loop or memory limit, or it was cancelled."""


class InvalidArgumentError(Error, ValueError):
    """An argument is wrong: an input's count, dtype or shape, a configuration value, an index,
    or a call on a closed session."""
