"""The CLI's subcommands, one module per area; each module has register(subparsers)."""
