"""Operator tools (``wincni`` command): not a CNI plugin, never on a plugin's start-up path."""
