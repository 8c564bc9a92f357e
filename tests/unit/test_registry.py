"""The registry is the one list of our commands: setup.cfg's console scripts and build.ps1's
``$Commands`` must say the same (each plugin's PLUGIN and flavor take their name from it)."""

from __future__ import annotations

import configparser
import importlib
import re
from pathlib import Path

from plugins import registry

REPO = Path(__file__).resolve().parents[2]


def console_scripts() -> dict[str, str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    lines = [line for line in cfg["options.entry_points"]["console_scripts"].splitlines() if line.strip()]
    return dict((part.strip() for part in line.split("=", 1)) for line in lines)


def test_setup_cfg_installs_exactly_the_registered_commands():
    assert console_scripts() == {name: f"{registry.entry_module(name)}:entry" for name in registry.COMMANDS}


def test_every_entry_and_flavor_module_exists():
    for name in registry.COMMANDS:
        assert callable(importlib.import_module(registry.entry_module(name)).entry)
    for name in registry.ENDPOINT_PLUGINS:
        assert importlib.import_module(registry.flavor_module(name)).FLAVOR.plugin == name
    for name in registry.PLUGINS:
        assert importlib.import_module(registry.entry_module(name)).PLUGIN.name == name


def test_build_ps1_builds_exactly_the_registered_commands():
    """build.ps1 runs before any Python exists on the machine, so it keeps its own list: this holds it."""
    [listed] = re.findall(r"^\$Commands = @\(([^)]*)\)$", (REPO / "build.ps1").read_text(), re.M)
    assert [name.strip().strip("'") for name in listed.split(",")] == list(registry.COMMANDS)
