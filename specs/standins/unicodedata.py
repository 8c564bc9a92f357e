"""The bundle's ``unicodedata``: ASCII text only, in place of the 700 KB Unicode database.

attrs imports ``unicodedata`` when it loads, for ``attrs.make_class`` alone, which neither
jsonschema nor wincni calls; the standard library asks it only about non-ASCII text (``\\N{...}``
escapes in a pattern, a non-ASCII URL host, caret widths in a traceback with columns). ASCII text is
its own normal form in all four forms; anything else is refused by name rather than answered wrong.
"""

import sys

FORMS = ("NFC", "NFD", "NFKC", "NFKD")
# The idna codec and stringprep take the Unicode 3.2 database when they load (every host name passes
# through the codec; only a non-ASCII one asks the database): the same refusals.
ucd_3_2_0 = sys.modules[__name__]


def normalize(form, text):
    if form not in FORMS:
        raise ValueError("invalid normalization form")
    if not text.isascii():
        raise ValueError("the wincni bundle normalizes ASCII text only (specs/standins/unicodedata.py)")
    return text


def is_normalized(form, text):
    return normalize(form, text) == text


def __getattr__(name):
    raise AttributeError(f"unicodedata.{name}: the wincni bundle's unicodedata holds no Unicode database")
