"""sandbox.commands: shell commands run to their end in the sandbox
(docs/api.md "Commands", POST /api/sandboxes/{id}/commands)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

from . import errors
from ._http import Connection, segment

DEFAULT_COMMAND_TIMEOUT_S = 60.0  # the gateway's default, too
# How much longer than the command's own timeout the HTTP request may take:
# the gateway kills the command at its timeout and then answers.
REQUEST_MARGIN_S = 30.0


@dataclass
class CommandResult:
    """A finished command. `exit_code` is None when a signal ended it
    (`signal` names its number); output is UTF-8 with invalid bytes
    replaced, at most 1 MiB per stream (`truncated` says when more came)."""

    stdout: str
    stderr: str
    exit_code: Optional[int]
    signal: Optional[int] = None
    timed_out: bool = False
    oom: bool = False
    truncated: bool = False
    duration_ms: Optional[int] = None

    @property
    def error(self) -> Optional[str]:
        """What went wrong, in words, or None for exit code 0."""
        if self.timed_out:
            return "timed out"
        if self.exit_code is None:
            return f"killed by signal {self.signal}" + (" (out of memory)" if self.oom else "")
        return None if self.exit_code == 0 else f"exit code {self.exit_code}"

    @classmethod
    def from_json(cls, value: Dict[str, Any]) -> CommandResult:
        code = value.get("exit_code")
        sig = value.get("signal")
        return cls(stdout=str(value.get("stdout") or ""), stderr=str(value.get("stderr") or ""),
                   exit_code=code if isinstance(code, int) else None, signal=sig if isinstance(sig, int) else None,
                   timed_out=bool(value.get("timed_out")), oom=bool(value.get("oom")),
                   truncated=bool(value.get("truncated")), duration_ms=value.get("duration_ms"))


class Commands:
    """The commands of one sandbox (sandbox.commands)."""

    def __init__(self, sandbox_id: str, connection: Connection) -> None:
        self._sandbox_id = sandbox_id
        self._conn = connection

    def run(self, cmd: Union[str, Sequence[str]], *, cwd: Optional[str] = None,
            envs: Optional[Mapping[str, str]] = None, stdin: Optional[str] = None,
            timeout: Optional[float] = DEFAULT_COMMAND_TIMEOUT_S, check: bool = True,
            on_stdout: Optional[Callable[[str], None]] = None, on_stderr: Optional[Callable[[str], None]] = None,
            request_timeout: Optional[float] = None) -> CommandResult:
        """Runs `cmd` (a string, with `bash -lc`, or an argv list) to its
        end; `cwd` is relative to /workspace; `timeout` in seconds (None:
        the gateway's default, 60 s), after which it is killed with all it
        started.

        With `check` (the default, as E2B does) a non-zero exit or a
        signal raises CommandExitError and a timeout raises TimeoutError,
        each carrying the result; with check=False the result is returned
        whatever happened. A sandbox that ends meanwhile raises
        SandboxEndedError. on_stdout/on_stderr get the output line by line
        once the command ended (the gateway does not stream it)."""
        what = f"run a command in sandbox {self._sandbox_id}"
        body: Dict[str, Any] = {"cmd": cmd if isinstance(cmd, str) else list(cmd)}
        if cwd is not None:
            body["cwd"] = cwd
        if envs:
            body["env"] = dict(envs)
        if stdin is not None:
            body["stdin"] = stdin
        if timeout is not None:
            body["timeout_s"] = timeout
        if request_timeout is None:
            request_timeout = max(self._conn.request_timeout,
                                  (timeout or DEFAULT_COMMAND_TIMEOUT_S) + REQUEST_MARGIN_S)
        answer = self._conn.request("POST", f"api/sandboxes/{segment(self._sandbox_id)}/commands", what=what,
                                    json_body=body, timeout=request_timeout,
                                    sandbox_id=self._sandbox_id).json_object(what)
        result = CommandResult.from_json(answer)
        if answer.get("sandbox_ended"):
            raise errors.SandboxEndedError(f"the sandbox ended while the command ran ({answer['sandbox_ended']})",
                                           reason=str(answer["sandbox_ended"]), what=what,
                                           sandbox_id=self._sandbox_id)
        if on_stdout:
            for line in result.stdout.splitlines(keepends=True):
                on_stdout(line)
        if on_stderr:
            for line in result.stderr.splitlines(keepends=True):
                on_stderr(line)
        if check and result.timed_out:
            limit = timeout if timeout is not None else DEFAULT_COMMAND_TIMEOUT_S
            raise errors.TimeoutError(f"the command ran past its timeout of {limit:g} s and was killed",
                                      command_result=result, what=what, sandbox_id=self._sandbox_id)
        if check and result.exit_code != 0:
            raise errors.CommandExitError(result, what=what, sandbox_id=self._sandbox_id)
        return result
