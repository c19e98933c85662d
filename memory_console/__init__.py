"""memory-console: inspect and administer the long-term memory of AI agents."""

__version__ = "0.1.0"
