"""Maintenance scripts for the repository (not shipped in the wheel)."""
