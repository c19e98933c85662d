"""The fixed clock of the tests, the snapshots and the benchmarks that share their data."""

NOW = 1_795_000_000.0  # the fixed `now` of the tests and snapshots
ISO_NOW = "2026-11-18T11:06:40Z"  # NOW in ISO 8601, for --now
DAY = 86400.0
