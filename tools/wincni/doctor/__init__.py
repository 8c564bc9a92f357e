"""``wincni doctor`` and the commands over its reads: ``bundle`` (archive/), ``metrics``."""
