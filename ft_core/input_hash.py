"""A stable hash of a planner's input, so identical plans are recognised (and stored once).

The hash is SHA-256 over canonical JSON (sorted keys, no whitespace) of the given documents.

    >>> input_hash({"b": 1, "a": [1.0, 2]}) == input_hash({"a": [1.0, 2], "b": 1})
    True
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel


def input_hash(*docs: Any) -> str:
    plain = [d.model_dump(mode="json", by_alias=True) if isinstance(d, BaseModel) else d for d in docs]
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
