"""``wincni bundle`` (the diagnostics bundle) and ``wincni doctor --replay`` reading one."""
