"""Bytes to text for every document ftops reads: UTF-8, or UTF-16/32 with a byte order mark.

Why: documents come from other tools. A stray binary, a UTF-16 export or a file cut in the middle of a
character must end in one line that says what is wrong and where (the byte offset), not in a
``UnicodeDecodeError`` traceback. Text marked by a byte order mark (BOM) is decoded in the encoding the
mark names (YAML 1.2 allows UTF-16 and UTF-32; spreadsheet and PowerShell exports write them with a
BOM); anything else must be UTF-8. A NUL byte in unmarked text means a binary file or UTF-16/32 without
its mark, which we cannot tell apart from garbage, so it is refused with its offset.

Example::

    >>> decode_text('{"a": 1}'.encode("utf-16"), "topology")
    '{"a": 1}'
    >>> decode_text(b'{"a": "\\xff"}', "topology")
    Traceback (most recent call last):
    ...
    ft_core.errors.InputError: topology: not UTF-8 text: byte 0xff at offset 7 (invalid start byte); save the file as UTF-8
"""

from __future__ import annotations

import codecs

from ft_core.errors import InputError

# Longest first: the UTF-32-LE mark begins with the UTF-16-LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)


def decode_text(data: bytes, what: str, field: str | None = None) -> str:
    """``data`` as text; :class:`InputError` (``<what>: ...``, field ``field`` or ``what``) naming the encoding
    problem and its byte offset."""
    field = field or what
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            return _decode(data, len(bom), codec, name, what, field)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(f"{what}: not text: a NUL byte at offset {nul} (a binary file, or UTF-16/UTF-32 without a "
                         "byte order mark); save the file as UTF-8", field=field)
    return _decode(data, 0, "utf-8", "UTF-8", what, field)


def _decode(data: bytes, start: int, codec: str, name: str, what: str, field: str) -> str:
    try:
        return data[start:].decode(codec)
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        shown = data[offset:offset + min(exc.end - exc.start, 4)].hex(" ")
        byte = "byte" if exc.end - exc.start == 1 else "bytes"
        raise InputError(f"{what}: not {name} text: {byte} 0x{shown.replace(' ', ' 0x')} at offset {offset} "
                         f"({exc.reason}); save the file as UTF-8", field=field) from None
