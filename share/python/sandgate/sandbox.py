"""Sandbox: one sandbox of a Sandgate gateway (docs/api.md "Sandboxes"),
with its files, commands, network policy and code contexts (kernels), and
run_code over the gateway's HTTP execute."""

from __future__ import annotations

import ssl
import threading
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Set, Type, Union

from . import errors
from ._http import DEFAULT_REQUEST_TIMEOUT_S, Connection, JSONObject, segment
from .commands import Commands
from .execution import Context, ErrorHandler, Execution, OutputHandler, ResultHandler, deliver
from .files import Files
from .models import Limits, Network, NetworkPolicy, SandboxInfo, network_json

DEFAULT_LANGUAGE = "python"
LANGUAGE_ALIASES = {"py": "python", "js": "javascript", "ts": "typescript", "sh": "bash", "shell": "bash"}
# The gateway interrupts code at its timeout and, if the kernel does not
# come back within a grace period, restarts it before it answers: the HTTP
# request may take this much longer than the execution's own timeout.
EXECUTE_MARGIN_S = 60.0
DEFAULT_MAX_EXECUTION_S = 600.0  # the default policy's max_execution_s
KERNEL_START_TIMEOUT_S = 120.0  # what a kernel's start or restart may take


class Sandbox:
    """A sandbox on a gateway. Make one with Sandbox.create() or attach to
    one with Sandbox.connect(); as a context manager it is killed on exit.

        with Sandbox.create(ttl_s=600) as sb:
            sb.run_code("x = 6 * 7")
            print(sb.run_code("x").text)  # 42

    One Sandbox may be used from several threads."""

    def __init__(self, info: SandboxInfo, connection: Connection) -> None:
        """Use Sandbox.create() or Sandbox.connect()."""
        self._id = info.sandbox_id
        self._path = f"api/sandboxes/{segment(self._id)}"
        self._conn = connection
        self._max_execution_s = info.max_execution_s
        self.files = Files(self._id, connection)
        self.commands = Commands(self._id, connection)
        self._lock = threading.Lock()
        self._default_contexts: Dict[str, Context] = {}  # kernelspec name -> the context run_code uses
        self._own_contexts: Set[str] = set()  # kernel ids made by create_code_context
        self._kernelspecs: Optional[Dict[str, str]] = None  # name -> language (lower case)
        self._default_kernelspec: Optional[str] = None

    # --- Making, finding and ending sandboxes -------------------------------

    @classmethod
    def create(cls, url: Optional[str] = None, token: Optional[str] = None, *, ttl_s: Optional[int] = None,
               idle_timeout_s: Optional[int] = None, metadata: Optional[Mapping[str, str]] = None,
               network: Optional[Network] = None, limits: Union[Limits, Mapping[str, Any], None] = None,
               envs: Optional[Mapping[str, str]] = None, request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
               ssl_context: Optional[ssl.SSLContext] = None) -> Sandbox:
        """Makes a sandbox. `url` and `token` default to $SANDGATE_URL and
        $SANDGATE_TOKEN. `ttl_s`: its time to live in seconds (the
        operator's default and maximum apply); `idle_timeout_s`: culled
        after that long without activity; `metadata`: string values to find
        it by (Sandbox.list); `network`: a mode ("none", "loopback",
        "allow", "open") or a NetworkPolicy, within the operator's ceiling
        (else NetworkRefusedError); `limits`: Limits (or its JSON) at most
        the operator's; `envs`: variables of every kernel and command in it.
        `request_timeout`: seconds each HTTP request may take (execute and
        commands wait longer, for their own timeout)."""
        conn = Connection(url, token, request_timeout=request_timeout, ssl_context=ssl_context)
        body: JSONObject = {}
        if ttl_s is not None:
            body["ttl_s"] = ttl_s
        if idle_timeout_s is not None:
            body["idle_timeout_s"] = idle_timeout_s
        if metadata is not None:
            body["metadata"] = dict(metadata)
        if network is not None:
            body["network"] = network_json(network)
        if limits is not None:
            body["limits"] = limits.to_json() if isinstance(limits, Limits) else dict(limits)
        if envs is not None:
            body["env"] = dict(envs)
        what = "create a sandbox"
        info = conn.request("POST", "api/sandboxes", what=what, json_body=body).json_object(what)
        return cls(SandboxInfo.from_json(info), conn)

    @classmethod
    def connect(cls, sandbox_id: str, url: Optional[str] = None, token: Optional[str] = None, *,
                request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
                ssl_context: Optional[ssl.SSLContext] = None) -> Sandbox:
        """Attaches to an existing sandbox by its id (NotFoundError, whose
        `reason` says why, when it is gone or not the caller's). run_code
        then uses the sandbox's existing kernel of each language, if any."""
        conn = Connection(url, token, request_timeout=request_timeout, ssl_context=ssl_context)
        return cls(_get_info(conn, sandbox_id), conn)

    @classmethod
    def list(cls, url: Optional[str] = None, token: Optional[str] = None, *,
             metadata: Optional[Mapping[str, str]] = None, request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
             ssl_context: Optional[ssl.SSLContext] = None) -> List[SandboxInfo]:
        """The caller's sandboxes (across a cluster), those whose metadata
        has every pair of `metadata` if given."""
        conn = Connection(url, token, request_timeout=request_timeout, ssl_context=ssl_context)
        query = [(f"metadata.{k}", v) for k, v in (metadata or {}).items()]
        what = "list sandboxes"
        found = conn.request("GET", "api/sandboxes", what=what, query=query).json_list(what)
        return [SandboxInfo.from_json(s) for s in found]

    @property
    def id(self) -> str:
        return self._id

    @property
    def sandbox_id(self) -> str:
        return self._id

    def __repr__(self) -> str:
        return f"Sandbox({self._id!r}, url={self._conn.url!r})"

    def get_info(self) -> SandboxInfo:
        """The sandbox as the gateway shows it now."""
        return _get_info(self._conn, self._id)

    def is_running(self) -> bool:
        """True while the sandbox exists."""
        try:
            self.get_info()
        except errors.NotFoundError:
            return False
        return True

    def set_timeout(self, ttl_s: int) -> SandboxInfo:
        """Sets the sandbox's end to `ttl_s` seconds from now (longer or
        shorter, up to the operator's maximum)."""
        what = f"set the time to live of sandbox {self._id}"
        info = self._conn.request("PATCH", f"{self._path}", what=what, json_body={"ttl_s": ttl_s},
                                  sandbox_id=self._id).json_object(what)
        return SandboxInfo.from_json(info)

    def kill(self) -> bool:
        """Ends the sandbox with every kernel and command in it: True, or
        False if it was gone already."""
        try:
            self._conn.request("DELETE", f"{self._path}", what=f"kill sandbox {self._id}",
                               sandbox_id=self._id)
        except errors.NotFoundError:
            return False
        return True

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.kill()

    # --- Network ------------------------------------------------------------

    def get_network(self) -> Union[str, NetworkPolicy]:
        """The policy in force: a bare mode as a string, egress as a NetworkPolicy."""
        return self.get_info().network

    def set_network(self, network: Network) -> SandboxInfo:
        """Changes the network policy while the sandbox runs (within the
        operator's ceiling, else NetworkRefusedError; ConflictError for a
        change between "none" and "loopback" without egress). Connections
        it no longer allows are closed."""
        what = f"set the network of sandbox {self._id}"
        info = self._conn.request("PATCH", f"{self._path}/network", what=what,
                                  json_body={"network": network_json(network)}, sandbox_id=self._id)
        return SandboxInfo.from_json(info.json_object(what))

    # --- Code ---------------------------------------------------------------

    def run_code(self, code: str, language: Optional[str] = None, *, context: Optional[Context] = None,
                 on_stdout: Optional[OutputHandler] = None, on_stderr: Optional[OutputHandler] = None,
                 on_result: Optional[ResultHandler] = None, on_error: Optional[ErrorHandler] = None,
                 timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> Execution:
        """Runs code in the sandbox's kernel for `language` ("python", the
        default; "javascript", "typescript", "r", "bash", or a kernelspec
        name), started on first use and kept, so state persists across
        calls; or in `context` (create_code_context), not both.

        `timeout` (seconds; at most, and by default, the sandbox's
        max_execution_s): the gateway then interrupts the code, keeping the
        kernel's state (or restarts the kernel if it does not stop), and
        this raises TimeoutError with the partial Execution. An error the
        code raises is `execution.error`, not an exception. The handlers are
        called with the output once the code ended (the gateway's HTTP
        execute does not stream): stdout and stderr line by line, then each
        result, then the error."""
        if context is not None and language is not None:
            raise errors.InvalidArgumentError("give a language or a context, not both", sandbox_id=self._id)
        ctx = context or self._default_context(language or DEFAULT_LANGUAGE)
        what = f"run code in sandbox {self._id} (kernel {ctx.id})"
        body: JSONObject = {"code": code}
        if timeout is not None:
            body["timeout_s"] = timeout
        if request_timeout is None:
            bound = timeout if timeout is not None else (self._max_execution_s or DEFAULT_MAX_EXECUTION_S)
            request_timeout = max(self._conn.request_timeout, bound + EXECUTE_MARGIN_S)
        try:
            record = self._conn.request("POST", f"api/kernels/{segment(ctx.id)}/execute", what=what, json_body=body,
                                        timeout=request_timeout, sandbox_id=self._id).json_object(what)
        except errors.NotFoundError:
            with self._lock:  # a kernel that went away: the next call starts another
                if self._default_contexts.get(ctx.kernel_name) is ctx:
                    del self._default_contexts[ctx.kernel_name]
            raise
        if record.get("sandbox_ended"):
            reason = str(record["sandbox_ended"])
            raise errors.SandboxEndedError(f"the sandbox ended while the code ran ({reason})", reason=reason,
                                           what=what, sandbox_id=self._id)
        execution = Execution.from_record(record)
        deliver(execution, on_stdout, on_stderr, on_result, on_error)
        if execution.status == "timeout":
            after = ("the kernel did not stop and was restarted: its state is lost" if execution.kernel_restarted
                     else "the kernel was interrupted and keeps its state")
            limit = f" of {timeout:g} s" if timeout is not None else ""
            raise errors.TimeoutError(f"the code ran past its timeout{limit}; {after}", execution=execution,
                                      what=what, sandbox_id=self._id)
        return execution

    def create_code_context(self, language: Optional[str] = None) -> Context:
        """A new kernel for `language` (default "python") with state of its
        own, for run_code(context=...)."""
        name = self._kernelspec_for(language or DEFAULT_LANGUAGE)
        ctx = self._start_kernel(name, language or DEFAULT_LANGUAGE)
        with self._lock:
            self._own_contexts.add(ctx.id)
        return ctx

    def list_code_contexts(self) -> List[Context]:
        """Every kernel in the sandbox, as a Context (`language` is its
        kernelspec's)."""
        specs = self._specs()
        return [Context(k.id, specs.get(k.name, k.name), k.name) for k in self.get_info().kernels]

    def restart_code_context(self, context: Union[Context, str]) -> None:
        """Restarts a context's kernel: its state is lost."""
        kid = context.id if isinstance(context, Context) else context
        self._conn.request("POST", f"api/kernels/{segment(kid)}/restart",
                           what=f"restart kernel {kid} in sandbox {self._id}",
                           timeout=max(self._conn.request_timeout, KERNEL_START_TIMEOUT_S), sandbox_id=self._id)

    def remove_code_context(self, context: Union[Context, str]) -> None:
        """Ends a context's kernel (the sandbox and its files stay)."""
        kid = context.id if isinstance(context, Context) else context
        self._conn.request("DELETE", f"api/kernels/{segment(kid)}", what=f"remove kernel {kid} in sandbox {self._id}",
                           sandbox_id=self._id)
        with self._lock:
            self._own_contexts.discard(kid)
            for name, ctx in list(self._default_contexts.items()):
                if ctx.id == kid:
                    del self._default_contexts[name]

    # --- Kernels behind run_code --------------------------------------------

    def _default_context(self, language: str) -> Context:
        """The kernel run_code uses for a language: the one it used before,
        else one of that kernelspec already in the sandbox (not made by
        create_code_context), else a new one."""
        name = self._kernelspec_for(language)
        with self._lock:
            ctx = self._default_contexts.get(name)
            if ctx is None:
                existing = [k for k in self.get_info().kernels if k.name == name and k.id not in self._own_contexts]
                ctx = Context(existing[0].id, language, name) if existing else self._start_kernel(name, language)
                self._default_contexts[name] = ctx
            return ctx

    def _start_kernel(self, name: str, language: str) -> Context:
        what = f"start a {name} kernel in sandbox {self._id}"
        model = self._conn.request("POST", f"{self._path}/kernels", what=what, json_body={"name": name},
                                   timeout=max(self._conn.request_timeout, KERNEL_START_TIMEOUT_S),
                                   sandbox_id=self._id).json_object(what)
        return Context(str(model["id"]), language, name)

    def _specs(self) -> Dict[str, str]:
        """The gateway's kernelspecs: name -> language (lower case), read once."""
        if self._kernelspecs is None:
            what = "list the gateway's kernelspecs"
            answer = self._conn.request("GET", "api/kernelspecs", what=what).json_object(what)
            specs = answer.get("kernelspecs") or {}
            self._kernelspecs = {name: str((s.get("spec") or {}).get("language", "")).lower()
                                 for name, s in specs.items() if isinstance(s, dict)}
            default = answer.get("default")
            self._default_kernelspec = default if isinstance(default, str) else None
        return self._kernelspecs

    def _kernelspec_for(self, language: str) -> str:
        """The kernelspec for a language: the gateway's default if it is of
        that language, else the one named like it, else the first of that
        language; or a kernelspec named `language`."""
        specs = self._specs()
        wanted = LANGUAGE_ALIASES.get(language.lower(), language.lower())
        matching = sorted(name for name, lang in specs.items() if lang == wanted)
        if matching:
            default = self._default_kernelspec
            if default is not None and default in matching:
                return default
            return wanted if wanted in matching else matching[0]
        if language in specs:
            return language
        known = sorted(set(specs.values()))
        raise errors.InvalidArgumentError(
            f"no kernel for language {language!r} on this gateway (languages: {', '.join(known)}; "
            f"kernelspecs: {', '.join(sorted(specs))})", sandbox_id=self._id)


def _get_info(conn: Connection, sandbox_id: str) -> SandboxInfo:
    what = f"get sandbox {sandbox_id}"
    info = conn.request("GET", f"api/sandboxes/{segment(sandbox_id)}", what=what, sandbox_id=sandbox_id)
    return SandboxInfo.from_json(info.json_object(what))
