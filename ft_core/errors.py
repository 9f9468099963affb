"""Errors that ft_core raises for bad input or for problems without a solution.

The CLI maps :class:`InputError` to exit status 2 and :class:`InfeasibleError` to exit status 3,
printing only the message: users see what is wrong, never a traceback.
"""


class InputError(ValueError):
    """A document or argument is invalid; the message names the field and the reason."""


class InfeasibleError(RuntimeError):
    """The input is valid but no plan satisfies its constraints; the message says how close we got."""
