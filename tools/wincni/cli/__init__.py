"""The command line: the one registry of commands, parsing, the context and the one output writer."""
