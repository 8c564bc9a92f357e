"""win-bridge command handlers: the shared HNS endpoint lifecycle with this plugin's flavor."""

from plugins.winnet.lifecycle import Lifecycle

from .flavor import FLAVOR

add, delete, check, gc, status = Lifecycle(FLAVOR).handlers()
