"""The CNI core every wincni plugin shares: env, versions, config, results, errors, exec, dispatch."""
