"""The ``fastbioner`` command: one small module per group of subcommands."""
