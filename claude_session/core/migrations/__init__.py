"""Append-only schema migrations: NNNN_slug.sql upgrades version NNNN-1 to NNNN."""
