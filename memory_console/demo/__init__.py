"""The demo store: realistic, deterministic memories with their histories, bulk-loaded fast.

build.py draws and loads the store (`memory-console demo`); content.py holds what it is made
of, its texts read from the package data texts.json.
"""

from memory_console.demo.build import DemoReport, build_demo

__all__ = ["DemoReport", "build_demo"]
