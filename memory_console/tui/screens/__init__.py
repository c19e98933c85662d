"""The console's screens, one per file; modals answer through dismiss()."""
