"""Hooks: one per external system ftops talks to."""
