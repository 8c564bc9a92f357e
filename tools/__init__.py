"""The operator tools (``wincni``: doctor, install, sourcevip, reclaim; ``hnsctl``), above the plugins."""
