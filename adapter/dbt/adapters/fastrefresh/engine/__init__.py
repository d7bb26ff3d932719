"""Refreshing views: the refresh itself (decide, capture, apply, record) and inspection
(staleness, explain)."""
