"""The NetworkPolicy node agent's parts (``wincni netpol``): what each of this node's pod
endpoints must hold (``wanted``), the one action per endpoint that gets it there (``plan``), the
shell that reads and sets endpoints through a winnet adapter (``node``), the API server watch
(``watch``) and the state ADD reads (``state``)."""
