"""Sensors that defer at once on ftops' triggers: no wait holds a worker slot."""
