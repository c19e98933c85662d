"""The Textual console; `memory_console.tui.app.make_app` is its one factory."""
