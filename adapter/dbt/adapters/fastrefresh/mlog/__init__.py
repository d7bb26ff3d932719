"""Materialized view logs: their DDL, capture of master commits into log rows, and how
views consume a log (setup, positions, purge)."""
