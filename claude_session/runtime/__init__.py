"""The hook process: stdin, the core, one answer on stdout. Above the core, beside the CLI."""
