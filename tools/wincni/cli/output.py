"""The one writer of ``wincni``'s documents: every JSON document a command prints goes through
``json_doc``, and a flag's file refused before a command could start is said by ``refused`` in
the command's format (the error envelope ``{"error": …}`` / ``FAILED: …``, or one stderr line for
a command without ``-o``)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from tools.wincni.cli.context import Context


def json_doc(out: TextIO, doc: Any) -> None:
    """``doc`` as one indented JSON document and a newline."""
    json.dump(doc, out, indent=2)
    out.write("\n")


def failed(out: TextIO, output: str, message: str) -> None:
    """The error envelope: why a command did nothing, in its ``-o`` format."""
    if output == "json":
        json_doc(out, {"error": message})
    else:
        out.write("".join(f"FAILED: {line}\n" for line in message.splitlines()))


def refused(ctx: Context, command: str, output: str | None, message: str) -> int:
    """A flag's file refused (``FlagFileError``) before ``command`` could run: exit status 1."""
    if output is None:
        ctx.stderr.write(f"wincni {command}: {message}\n")
    else:
        failed(ctx.stdout, output, message)
    return 1
