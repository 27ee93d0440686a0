"""Python client of Sandgate's API (docs/api.md): sandboxes with a TTL,
metadata and a network policy; code run in their kernels; their files and
commands. Standard library only.

    from sandgate import Sandbox

    with Sandbox.create(ttl_s=600, metadata={"user": "u-1"}) as sb:
        sb.files.write("data.csv", "a,b\\n1,2\\n")
        execution = sb.run_code("import pandas as pd; pd.read_csv('data.csv').a.sum()")
        print(execution.text)                       # 1
        print(sb.commands.run("ls -l").stdout)

The gateway's URL and token come from the arguments or from $SANDGATE_URL
and $SANDGATE_TOKEN.
"""

from .commands import CommandResult, Commands
from .errors import (APIConnectionError, AuthenticationError, CommandExitError, ConflictError, InvalidArgumentError,
                     NetworkRefusedError, NotFoundError, PayloadTooLargeError, PermissionDeniedError, RateLimitError,
                     SandboxEndedError, SandgateError, TimeoutError, UnavailableError)
from .execution import Context, Execution, ExecutionError, Logs, OutputMessage, Result
from .files import Files
from .models import EntryInfo, KernelInfo, Limits, Network, NetworkPolicy, SandboxInfo, WriteInfo
from .sandbox import Sandbox

__version__ = "0.1.0"

__all__ = [
    "APIConnectionError",
    "AuthenticationError",
    "CommandExitError",
    "CommandResult",
    "Commands",
    "ConflictError",
    "Context",
    "EntryInfo",
    "Execution",
    "ExecutionError",
    "Files",
    "InvalidArgumentError",
    "KernelInfo",
    "Limits",
    "Logs",
    "Network",
    "NetworkPolicy",
    "NetworkRefusedError",
    "NotFoundError",
    "OutputMessage",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "Result",
    "Sandbox",
    "SandboxEndedError",
    "SandboxInfo",
    "SandgateError",
    "TimeoutError",
    "UnavailableError",
    "WriteInfo",
    "__version__",
]
