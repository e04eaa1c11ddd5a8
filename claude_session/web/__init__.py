"""The local web view, `claude-session serve` (no imports here).

- `web_server`: the loopback HTTP server and its JSON endpoints.
- `web_pages`: the page it serves.
"""
