"""``wincni metrics``: the doctor's findings as gauges for windows_exporter's textfile collector."""
