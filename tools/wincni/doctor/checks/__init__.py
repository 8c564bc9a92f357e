"""``wincni doctor``'s checks, one module per subject; ``registry.CHECKS`` lists them in order."""
