"""Maintenance passes, one module each; a module's `PASS` registers it (see registry.py)."""
