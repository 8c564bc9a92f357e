"""``wincni install``: lays the package folder and the CNI config into containerd's CNI folders."""
