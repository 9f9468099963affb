"""The input layer: every document and every number ftops reads passes through here first.

- :mod:`~ft_core.input.limits`: how large, deep, long and many inputs may be (``FTOPS_MAX_*``).
- :mod:`~ft_core.input.decoding`: bytes to text (UTF-8, or UTF-16/32 with a byte order mark), with the
  offset of the first bad byte.
- :mod:`~ft_core.input.documents`: a JSON or YAML file read within the limits, parsed without
  recursion errors, non-finite numbers or non-JSON values.
- :mod:`~ft_core.input.validation`: pydantic errors as one line naming the field.
- :mod:`~ft_core.input.quantities`: the kinds of numbers (finite, positive, at most a limit) as pydantic
  types shared by documents, flags, DAG Params and operators.

A bad input raises :class:`ft_core.errors.InputError` (exit 2) with its ``field``; nothing is planned,
started or written before the input has passed.
"""

from ft_core.input.documents import read_document, read_json_lines
from ft_core.input.limits import Limits, current_limits
from ft_core.input.quantities import check, comma_list, flag, param_schema
from ft_core.input.validation import validate

__all__ = ["Limits", "check", "comma_list", "current_limits", "flag", "param_schema", "read_document", "read_json_lines", "validate"]
