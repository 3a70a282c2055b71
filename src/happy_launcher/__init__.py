"""happy_launcher: run Claude Code as `happy claude` and mirror the session as a flat session protocol."""

__version__ = "0.1.0"
