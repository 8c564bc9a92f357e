"""``hnsctl``: look at and shape HNS from the command line, on real HNS and the simulator alike.

It plays ``Get-HnsNetwork``/``Get-HnsEndpoint`` for people, and flanneld/``start.ps1`` for the
demo (``network create`` builds the same documents they send). Output goes to the ``stdout``
given to ``main``; failures are one line on ``stderr`` and a non-zero exit, never a traceback.

The rooms: ``cli`` (the one list of commands, the parser, ``main``), ``context`` (what a command
is handed: stdout, the environment, HNS opened on first use), ``views`` (one shape over HCN and
HNSCall, which ``--v1`` picks), ``options`` (options several commands share), ``tables`` (each
object's table row) and ``output`` (the only writer of JSON and tables to stdout); then one module
per command: ``version``, ``dump``, ``networks``, ``endpoints``, ``loadbalancers``,
``policylists``, ``namespaces``, ``containers``, ``restart``.

A new command ``hnsctl frob``: a module ``tools/hnsctl/frob.py`` with ``add_parser(sub)`` (its
parser: ``sub.add_parser("frob", help=...)``, then ``options.add_output`` and its own options;
a command with actions adds subparsers with ``dest="action"``) and ``run(args, ctx)`` (reads HNS
through ``ctx.view(args)`` or ``ctx.hcn`` / ``ctx.hnscall``, prints through ``output``; a bad
combination of options is ``basics.cli.UsageError``, exit 2; an HNS failure propagates, exit 1),
and its line ``("frob", "frob")`` in ``cli.COMMANDS``, where it stands in ``--help``.
"""

from tools.hnsctl.cli import build_parser, entry, main

__all__ = ["build_parser", "entry", "main"]
