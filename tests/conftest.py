collect_ignore = ["windows"]
