"""The fast path: events applied to the store.

Standard library and apsw only; imports nothing above it.
"""
