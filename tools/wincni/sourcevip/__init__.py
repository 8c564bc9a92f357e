"""``wincni sourcevip``: reserves kube-proxy's source VIP in the pods' host-local store."""
