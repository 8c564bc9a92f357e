"""What any command reads of the node (no printing): its paths and CNI folders, the pods' network, what install left, files and flag files, sandboxes, the runtime's CRI."""
