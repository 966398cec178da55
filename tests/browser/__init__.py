"""Browser tests (a package: its modules import the harness as `.harness`)."""
