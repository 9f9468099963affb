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

import lazy_loader

# Public names load on first use, so importing one module of the package (the CLI does, for every
# command) does not import all of them.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "documents": ["read_document", "read_json_lines"],
        "limits": ["Limits", "current_limits"],
        "quantities": ["check", "comma_list", "flag", "param_schema"],
        "validation": ["validate"],
    },
)
