"""The NetworkPolicy node agent's parts (``wincni netpol``): what each of this node's pod
endpoints must hold (``wanted``), the one action per endpoint that gets it there (``plan``), the
shell that reads and sets endpoints through a winnet adapter (``node_endpoints``), the API server
(``kubeapi``) and its watch (``watch``), the state ADD reads (``state``) and the loop over them
all (``agent``)."""
