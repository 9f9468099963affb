"""JSON state files that readers never see half-written: write a temporary file, then rename it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel


def write_json(path: Path, doc: BaseModel | dict) -> None:
    """Write ``doc`` to ``path`` atomically (same folder, ``os.replace``), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = doc.model_dump_json(indent=2) if isinstance(doc, BaseModel) else json.dumps(doc, indent=2, default=str)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)
