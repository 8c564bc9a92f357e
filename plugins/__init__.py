"""wincni: Windows CNI plugins for Kubernetes over HNS."""
