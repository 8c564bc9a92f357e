"""The one error the bottom layer raises of its own: a path a SYSTEM/root process will not trust."""


class UnsafePath(PermissionError):
    """A path the plugins refuse to trust (``basics.safefs``); ``str()`` says which, why and what to do."""

    FIX = "it was not created by the plugins: remove it (or give it to SYSTEM/root) so they can make their own"
    #: A link or junction on the way to a folder: an administrator's may be meant (/opt/cni/bin -> /usr/lib/cni).
    LINK_FIX = (
        "a link is never followed: if an administrator made it, name the folder it points to instead; else remove it"
    )

    def __init__(self, path: str, problem: str, fix: str = FIX) -> None:
        super().__init__(f"{path} {problem}: {fix}")
        self.path = path
        self.problem = problem
        self.fix = fix
