"""happy's version (one place: the package, the control protocol's hello and `--version`)."""

__version__ = "0.1.0"
