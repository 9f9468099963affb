"""Operators: each does one thing and leaves planning to ft_core."""
