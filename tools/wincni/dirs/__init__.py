"""``wincni dirs``: where the runtime's CNI folders are on this node, and why."""
