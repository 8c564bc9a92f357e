"""win-bridge command handlers: the shared HNS endpoint lifecycle with this plugin's flavor."""
from plugins.winnet.lifecycle import Lifecycle

from .flavor import FLAVOR

_lifecycle = Lifecycle(FLAVOR)
add = _lifecycle.add
delete = _lifecycle.delete
check = _lifecycle.check
gc = _lifecycle.gc
status = _lifecycle.status
