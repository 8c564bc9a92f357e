"""The CRI client's one error hierarchy: every failure of a call is a ``CriError``, so the sweep
catches one type and falls back to the ownership rule alone."""

from __future__ import annotations


class CriError(Exception):
    """The runtime's pod list could not be had; the message says what failed."""


class Unreachable(CriError):
    """No answer: the socket or pipe is absent, refused, closed early, or the deadline passed."""


class Malformed(CriError):
    """The peer sent bytes that are not HTTP/2, HPACK, gRPC or the protobuf expected, or too many."""


class CallFailed(CriError):
    """The runtime answered with an error (an HTTP status other than 200, or a gRPC status not 0)."""
