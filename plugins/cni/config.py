"""Network configuration: decoding, Go-style case-insensitive keys, and schema validation.

jsonschema is imported only when a plugin validates (never for VERSION or a rejected env),
because it alone costs 60-80 ms of start-up on every pod.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from basics import jsontext

from . import version as ver
from .errors import DECODE_FAILURE, INCOMPATIBLE_VERSION, INVALID_CONFIG, CniError
from .names import PATTERN, file_name_problem, is_name

# The CNI specification's network name pattern.
#: The longest network name: it becomes a folder (host-local's store), a lock file and the HNS
#: network's name, and every path built from it must fit (Windows' 260 characters included).
MAX_NAME = 128


def decode(stdin: bytes) -> dict:
    """stdin -> config object; not JSON (or not an object) is code 6."""
    try:
        doc = jsontext.loads(stdin, parse_constant=_not_json)
    except ValueError as exc:
        raise CniError(
            DECODE_FAILURE,
            f"error unmarshall network config: {exc}",
            "the network configuration on stdin must be a JSON object",
        ) from exc
    if not isinstance(doc, dict):
        raise CniError(
            DECODE_FAILURE, "error unmarshall network config: not a JSON object", f"got {type(doc).__name__}"
        )
    if b"\\u0000" in (stdin if isinstance(stdin, bytes) else stdin.encode()):  # JSON holds a NUL only escaped
        try:
            where = _nul_at(doc, "")
        except RecursionError:  # nested as deep as the parser allows: name no field
            where = "the config"
        if where is not None:
            raise CniError(
                INVALID_CONFIG,
                f"{where} holds a NUL character",
                "no name, path or value of a CNI config may contain one: remove it",
            )
    return doc


def _nul_at(value: Any, where: str) -> str | None:
    """Where in a decoded config a NUL character stands (key or string value), else None: a path
    holding one makes every file call it reaches fail with ValueError, so it is refused here, once,
    for every field a plugin reads."""
    if isinstance(value, str):
        return where if "\0" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            shown = key.replace("\0", "\\u0000")
            here = f"{where}.{shown}" if where else shown
            found = here if "\0" in key else _nul_at(item, here)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _nul_at(item, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def _not_json(token: str) -> None:
    """NaN and Infinity are Python's extension, not JSON (Go rejects them); they would crash later."""
    raise ValueError(f"invalid JSON token {token}")


def check_name(conf: Mapping[str, Any]) -> str:
    name = conf.get("name")
    if not name:
        raise CniError(
            INVALID_CONFIG,
            "missing network name",
            'set "name" to the network name (for win-bridge/win-overlay: the HNS network)',
        )
    if not is_name(name):
        raise CniError(
            INVALID_CONFIG, "invalid characters found in network name", f"name {name!r:.80} must match {PATTERN}"
        )
    problem = file_name_problem(name, MAX_NAME)
    if problem:
        raise CniError(
            INVALID_CONFIG,
            f"network name {name[:40]!r}{'...' if len(name) > 40 else ''} {problem}",
            "the name becomes file and folder names on the node: pick a short ordinary one",
        )
    return name


def check_count(field: str, items: Any, cap: int) -> None:
    """A list over its documented cap is code 7 naming the field and the cap (caps bound what one
    pod's config can cost every command that reads it)."""
    if isinstance(items, (list, tuple)) and len(items) > cap:
        raise CniError(
            INVALID_CONFIG,
            f"{field}: {len(items)} entries, over the limit of {cap}",
            f"a pod's config may list at most {cap} {field} entries",
        )


def node_path(posix: str, platform: str, cwd: str | None = None) -> str:
    """A Unix-style default path as the Go plugins open it: on Windows, rooted at the drive of
    the current directory (``cwd``, else the process's), made explicit."""
    if platform != "win32":
        return posix
    import ntpath  # os.path on Windows; elsewhere only for a Windows platform in tests
    import os

    return ntpath.splitdrive(cwd if cwd is not None else os.getcwd())[0] + posix.replace("/", "\\")


def cni_version(conf: Mapping[str, Any]) -> str:
    """The config's cniVersion (absent means 0.1.0); unsupported is code 1."""
    version = conf.get("cniVersion")
    if version is None or version == "":
        return ver.IMPLICIT
    if not isinstance(version, str):
        raise CniError(
            INVALID_CONFIG,
            f"cniVersion: {jsontext.dumps(version)[:40]} is not a string",
            f'write the version in quotes, e.g. "cniVersion": "{ver.LATEST}"',
        )
    if version not in ver.SUPPORTED:
        raise CniError(
            INCOMPATIBLE_VERSION,
            "incompatible CNI versions",
            f'config is "{version}", plugin supports {ver.supported_list()}',
        )
    return version


# ---------------------------------------------------------------- validation


def validate(doc: Any, schema: dict) -> None:
    """Validate against a JSON Schema; the first (most specific) error becomes code 7.

    A valid config is recognised by ``quickschema`` without importing jsonschema; jsonschema
    runs only to explain a rejection (or for keywords the quick checker does not know).
    """
    from .quickschema import is_valid

    if is_valid(doc, schema):
        return
    errors = _schema_errors(doc, schema)
    if errors:
        raise invalid_field(errors[0])


#: Commands that tear down: a runtime retries them until they succeed, and the pod hangs in
#: Terminating (its IP and endpoint taken) while they fail.
TEARDOWN = ("DEL", "GC")


def validate_for(command: str, doc: dict, schema: dict, needs: Mapping[str, str]) -> dict:
    """``validate`` for ADD, CHECK and STATUS; for DEL and GC, only the fields in ``needs``.

    Operators edit a node's config while pods run, so a DEL may carry a config that no longer
    validates. ``needs`` maps each field teardown cannot do without (a dotted path such as
    ``ipam.dataDir``) to what it identifies: an error in one of them, or in an object holding
    one, is code 7 saying what cannot be identified. Any other error is a warning naming the
    field, and the invalid part (its top-most key that holds no needed field) is left out of the
    returned copy, so the model built from it uses its defaults there.
    """
    if command not in TEARDOWN:
        validate(doc, schema)
        return doc
    from .quickschema import is_valid

    if is_valid(doc, schema):
        return doc
    needed = {tuple(name.split(".")): name for name in needs}
    errors = [(error, field) for error in _schema_errors(doc, schema) for field in _fields(error)]
    for error, field in errors:
        name = next(
            (n for path, n in needed.items() if path[: len(field)] == field or field[: len(path)] == path),
            None if field else "(config)",
        )
        if name is not None:
            problem = invalid_field(error)
            raise CniError(
                INVALID_CONFIG,
                f"{command} cannot identify {needs.get(name, 'anything')}: {problem.msg}",
                problem.details or f'fix "{name}" in the network configuration',
            )
    from . import log

    holders = {path[:i] for path in needed for i in range(1, len(path) + 1)}
    out = doc
    for error, field in errors:
        cut = next(field[:i] for i in range(1, len(field) + 1) if field[:i] not in holders)
        log.warning(f"{command} ignores {invalid_field(error).msg} (teardown does not need it)", field=json_path(field))
        out = _without(out, cut)
    return out


def _fields(error: Any) -> list[tuple]:
    """The field(s) an error is about: each missing required key is its own field."""
    path = tuple(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        return [path + (k,) for k in error.validator_value if k not in error.instance] or [path]
    return [path]


def _without(doc: Any, path: tuple) -> Any:
    """A copy of ``doc`` without ``path`` (the dicts along it are copied, never mutated)."""
    if not path or not isinstance(doc, dict) or path[0] not in doc:
        return doc
    out = dict(doc)
    if len(path) == 1:
        del out[path[0]]
    else:
        out[path[0]] = _without(doc[path[0]], path[1:])
    return out


def _schema_errors(doc: Any, schema: dict) -> list:
    import jsonschema  # lazy: see module docstring

    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, format_checker=_format_checker(validator_cls))
    return sorted(validator.iter_errors(doc), key=_error_rank)


def _error_rank(error: Any) -> tuple:
    # Deepest path first: "ipam.ranges[0][0].subnet" beats "ipam".
    return (-len(error.absolute_path), str(error.message))


def json_path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(config)"


def invalid_field(error: Any) -> CniError:
    path = json_path(error.absolute_path)
    hint = error.schema.get("description") if isinstance(error.schema, dict) else None
    if error.validator == "format":
        msg = f"{path}: {jsontext.dumps(error.instance)} is not a valid {_FORMAT_NAMES.get(error.validator_value, error.validator_value)}"
    elif error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        msg = f"{path}: missing required field {missing!r}"
    elif error.validator == "additionalProperties":
        msg = f"{path}: {error.message}"
    else:
        msg = f"{path}: {jsontext.dumps(error.instance)[:120]} is invalid: {error.message}"
    return CniError(INVALID_CONFIG, msg, hint or "")


_FORMAT_NAMES = {"cidr": "CIDR", "ip": "IP address", "ipv4": "IPv4 address", "mac-prefix": "MAC prefix"}


def _format_checker(validator_cls: Any) -> Any:
    from basics import ipaddr

    checker = validator_cls.FORMAT_CHECKER

    @checker.checks("cidr", raises=ValueError)
    def _cidr(value: Any) -> bool:
        if not isinstance(value, str):
            return True
        if "/" not in value:
            raise ValueError("missing /prefix")
        ipaddr.ip_interface(value)
        return True

    @checker.checks("ip", raises=ValueError)
    def _ip(value: Any) -> bool:
        if not isinstance(value, str):
            return True
        ipaddr.ip_address(value)
        return True

    return checker


# ---------------------------------------------------------------- GC


def valid_attachments(conf: Mapping[str, Any]) -> set[tuple[str, str]] | None:
    """``cni.dev/valid-attachments`` as {(containerID, ifname)}.

    None when the key is absent: that is a malformed GC, not "nothing is valid", and callers
    release nothing rather than wipe the node. An empty list is meaningful (release all).
    """
    raw = conf.get("cni.dev/valid-attachments")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise CniError(INVALID_CONFIG, "cni.dev/valid-attachments: must be a list of {containerID, ifname}")
    out = set()
    for i, att in enumerate(raw):
        if (
            not isinstance(att, dict)
            or not isinstance(att.get("containerID"), str)
            or not isinstance(att.get("ifname"), str)
        ):
            raise CniError(
                INVALID_CONFIG,
                f"cni.dev/valid-attachments[{i}]: needs string containerID and ifname",
                jsontext.dumps(att)[:120],
            )
        out.add((att["containerID"], att["ifname"]))
    return out


def iter_policies(conf: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(name, value) of each ``policies`` entry, keys read like Go (Name/name, Value/value)."""
    from basics.jsonci import get_ci

    for entry in get_ci(conf, "policies") or []:
        if isinstance(entry, dict):
            yield get_ci(entry, "name", ""), get_ci(entry, "value")
