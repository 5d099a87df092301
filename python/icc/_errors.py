"""The package's exceptions. Bad inputs raise ValueError."""


class Error(Exception):
    """Anything icc reports; str() is its one-line message."""


class CompileError(Error):
    """The compiler refused the model: str() is icc's one-line message."""


class LoadError(Error):
    """A model.so could not be opened (missing, not icc's, wrong ABI or CPU)."""


class RunError(Error):
    """A run failed for a reason other than its inputs (ICC_ERR_INTERNAL, ...)."""
