"""The exceptions of the client: one per kind of failure, each carrying the
HTTP status and the gateway's `reason` and `message` (docs/api.md: every
error is JSON `{"reason", "message"}`), and naming the sandbox or path it
was about when there is one."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .commands import CommandResult
    from .execution import Execution


class SandgateError(Exception):
    """Base of every error this client raises.

    `status`: the HTTP status (None when no response came); `reason` and
    `message`: the gateway's error body (`message` is this client's own
    description when the gateway sent none); `sandbox_id` and `path`: what
    the call was about, when known."""

    def __init__(self, message: str, *, status: Optional[int] = None, reason: Optional[str] = None,
                 what: Optional[str] = None, sandbox_id: Optional[str] = None, path: Optional[str] = None) -> None:
        self.message = message
        self.status = status
        self.reason = reason
        self.sandbox_id = sandbox_id
        self.path = path
        text = f"{what}: {message}" if what else message
        if status is not None:
            text += f" (HTTP {status}" + (f", {reason})" if reason else ")")
        super().__init__(text)


class InvalidArgumentError(SandgateError):
    """400: the gateway refused the request as malformed or invalid (its
    message names the field), or this client refused it before sending."""


class AuthenticationError(SandgateError):
    """401 (no token) or 403 with a wrong token."""


class PermissionDeniedError(SandgateError):
    """403 for something other than the token: a path the sandbox user may
    not read or write, an admin-only call."""


class NetworkRefusedError(PermissionDeniedError):
    """403 `network_refused`: a network policy above the operator's ceiling
    (the message names the host, cidr, port or limit)."""


class NotFoundError(SandgateError):
    """404: an unknown sandbox, kernel or path. `reason` says why a sandbox
    is gone (`expired`, `culled`, `deleted`, `ended`, `lost`), or
    `no_such_path`, `other_node`, ..."""


class SandboxEndedError(NotFoundError):
    """The sandbox ended while a command or an execution ran in it;
    `reason` says why (`deleted`, `expired`, `culled`, `ended`)."""


class ConflictError(SandgateError):
    """409: the request conflicts with the current state (a path that
    exists, a directory where a file was expected, a network change the
    sandbox cannot make)."""


class PayloadTooLargeError(SandgateError):
    """413: a body or the workspace is too large."""


class RateLimitError(SandgateError):
    """429: over the principal's quota (sandboxes, kernels, memory)."""


class UnavailableError(SandgateError):
    """503: the node is at its --max-kernels or draining; try again after
    `retry_after_s` (or on another node)."""

    def __init__(self, message: str, *, retry_after_s: Optional[float] = None, status: Optional[int] = None,
                 reason: Optional[str] = None, what: Optional[str] = None, sandbox_id: Optional[str] = None,
                 path: Optional[str] = None) -> None:
        super().__init__(message, status=status, reason=reason, what=what, sandbox_id=sandbox_id, path=path)
        self.retry_after_s = retry_after_s


class TimeoutError(SandgateError, builtins.TimeoutError):
    """A timeout: an execution or a command ran past its `timeout` (the
    gateway interrupted or killed it; `execution` or `command_result` holds
    what it produced so far), or the gateway did not answer within the
    request timeout. Also a built-in TimeoutError."""

    def __init__(self, message: str, *, execution: Optional[Execution] = None,
                 command_result: Optional[CommandResult] = None, status: Optional[int] = None,
                 reason: Optional[str] = None, what: Optional[str] = None, sandbox_id: Optional[str] = None,
                 path: Optional[str] = None) -> None:
        super().__init__(message, status=status, reason=reason, what=what, sandbox_id=sandbox_id, path=path)
        self.execution = execution
        self.command_result = command_result


class APIConnectionError(SandgateError, builtins.ConnectionError):
    """The gateway could not be reached, or the connection broke before an
    answer. Also a built-in ConnectionError."""


class CommandExitError(SandgateError):
    """A command ended with a non-zero exit code or by a signal (raised by
    `commands.run` unless `check=False`). `result` is its CommandResult;
    `stdout`, `stderr`, `exit_code` and `signal` are the result's."""

    def __init__(self, result: CommandResult, *, what: Optional[str] = None,
                 sandbox_id: Optional[str] = None) -> None:
        if result.exit_code is None:
            ended = f"was killed by signal {result.signal}" + (" (out of memory)" if result.oom else "")
        else:
            ended = f"exited with code {result.exit_code}"
        tail = result.stderr.strip().splitlines()[-1:] if result.stderr.strip() else []
        super().__init__(f"the command {ended}" + (f": {tail[0]}" if tail else ""), what=what,
                         sandbox_id=sandbox_id)
        self.result = result

    @property
    def stdout(self) -> str:
        return self.result.stdout

    @property
    def stderr(self) -> str:
        return self.result.stderr

    @property
    def exit_code(self) -> Optional[int]:
        return self.result.exit_code

    @property
    def signal(self) -> Optional[int]:
        return self.result.signal
