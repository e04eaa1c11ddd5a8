"""Slower work above the core: daemon, judge, installer, doctor, demo, read queries."""
