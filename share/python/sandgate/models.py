"""What the gateway returns about sandboxes, kernels and files, as typed
values (docs/api.md), each parsed from its JSON in one place."""

from __future__ import annotations

import datetime
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

from . import errors

JSONObject = Dict[str, Any]
WORKSPACE = "/workspace"  # where relative paths lead, in the sandbox


def parse_time(value: Any) -> Optional[datetime.datetime]:
    """An ISO 8601 UTC time of the gateway ("...Z") as an aware datetime."""
    if not isinstance(value, str) or not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def parse_mtime_ms(value: Any) -> Optional[datetime.datetime]:
    if not isinstance(value, (int, float)):
        return None
    return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.timezone.utc)


@dataclass
class NetworkPolicy:
    """A network policy in its object form (docs/policy.md "Network and
    egress"); a bare mode is a plain string ("none", "loopback", "allow",
    "open"). Fields left None take the gateway's defaults."""

    mode: str
    hosts: Optional[List[str]] = None
    cidrs: Optional[List[str]] = None
    ports: Optional[List[int]] = None
    non_tls_ports: Optional[List[int]] = None
    max_connections: Optional[int] = None
    bytes_per_second: Optional[int] = None

    def to_json(self) -> JSONObject:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> NetworkPolicy:
        return cls(mode=str(value.get("mode", "")), hosts=value.get("hosts"), cidrs=value.get("cidrs"),
                   ports=value.get("ports"), non_tls_ports=value.get("non_tls_ports"),
                   max_connections=value.get("max_connections"), bytes_per_second=value.get("bytes_per_second"))


# What a caller may pass as a network: a mode, a NetworkPolicy, or its JSON.
Network = Union[str, NetworkPolicy, Mapping[str, Any]]


def network_json(network: Network) -> Any:
    if isinstance(network, str):
        return network
    if isinstance(network, NetworkPolicy):
        return network.to_json()
    return dict(network)


def parse_network(value: Any) -> Union[str, NetworkPolicy]:
    if isinstance(value, dict):
        return NetworkPolicy.from_json(value)
    return str(value)


@dataclass
class Limits:
    """A sandbox's resource limits; None takes (on create) the operator's."""

    memory_bytes: Optional[int] = None
    cpu: Optional[float] = None
    pids: Optional[int] = None
    workspace_bytes: Optional[int] = None

    def to_json(self) -> JSONObject:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, value: Any) -> Limits:
        if not isinstance(value, dict):
            return cls()
        return cls(memory_bytes=value.get("memory_bytes"), cpu=value.get("cpu"), pids=value.get("pids"),
                   workspace_bytes=value.get("workspace_bytes"))


@dataclass
class KernelInfo:
    """A kernel (a code context) as GET /api/kernels/{id} shows it."""

    id: str
    name: str
    sandbox_id: Optional[str]
    execution_state: Optional[str]
    last_activity: Optional[datetime.datetime]
    connections: int

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> KernelInfo:
        return cls(id=str(value["id"]), name=str(value.get("name", "")), sandbox_id=value.get("sandbox_id"),
                   execution_state=value.get("execution_state"),
                   last_activity=parse_time(value.get("last_activity")),
                   connections=int(value.get("connections") or 0))


@dataclass
class SandboxInfo:
    """A sandbox as the gateway shows it (GET /api/sandboxes/{id}).
    `raw` is the JSON as received, for fields this client does not know."""

    sandbox_id: str
    created: Optional[datetime.datetime]
    expires_at: Optional[datetime.datetime]
    idle_timeout_s: Optional[int]
    last_activity: Optional[datetime.datetime]
    metadata: Dict[str, str]
    limits: Limits
    max_execution_s: Optional[int]
    network: Union[str, NetworkPolicy]
    kernels: List[KernelInfo]
    raw: JSONObject = field(repr=False, compare=False, default_factory=dict)

    @property
    def id(self) -> str:
        return self.sandbox_id

    @classmethod
    def from_json(cls, value: JSONObject) -> SandboxInfo:
        if not isinstance(value.get("id"), str):
            raise errors.SandgateError(f"a sandbox without an id: {value!r}")
        return cls(sandbox_id=value["id"], created=parse_time(value.get("created")),
                   expires_at=parse_time(value.get("expires_at")), idle_timeout_s=value.get("idle_timeout_s"),
                   last_activity=parse_time(value.get("last_activity")),
                   metadata=dict(value.get("metadata") or {}), limits=Limits.from_json(value.get("limits")),
                   max_execution_s=value.get("max_execution_s"), network=parse_network(value.get("network")),
                   kernels=[KernelInfo.from_json(k) for k in value.get("kernels") or [] if isinstance(k, dict)],
                   raw=value)


@dataclass
class EntryInfo:
    """A file, directory, link or other entry in the sandbox. `path` is
    absolute in the sandbox's view; `type` is "file", "directory",
    "symlink" or "other". `mode`, `uid`, `gid` and `symlink_target` come
    with get_info() (a stat), not with list()."""

    name: str
    type: str
    path: str
    size: int
    modified_time: Optional[datetime.datetime]
    mode: Optional[int] = None
    uid: Optional[int] = None
    gid: Optional[int] = None
    symlink_target: Optional[str] = None

    @property
    def is_dir(self) -> bool:
        return self.type == "directory"

    @property
    def is_file(self) -> bool:
        return self.type == "file"


@dataclass
class WriteInfo:
    """What files.write() wrote: `path` absolute in the sandbox, `size` in bytes."""

    name: str
    path: str
    size: int
    type: str = "file"
