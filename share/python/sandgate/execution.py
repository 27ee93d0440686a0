"""What running code gives back: an Execution (logs, results, error) built
from the gateway's execution record (POST /api/kernels/{id}/execute), with
each display bundle as a Result whose binary formats are decoded."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

JSONObject = Dict[str, Any]

# The MIME types a Result has an attribute for; the rest stay in `data`
# (and in `extra`).
_KNOWN_FORMATS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
}


def _text(value: Any) -> Optional[str]:
    """A bundle's text value (nbformat allows a list of lines)."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else None


def _binary(value: Any) -> Optional[bytes]:
    text = _text(value)
    if text is None:
        return None
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return None


@dataclass
class Result:
    """One display_data or execute_result bundle. `png`, `jpeg` and `pdf`
    are bytes (decoded from the base64 the kernel sent); `json` is the
    parsed value; `data` is the raw MIME bundle as sent, `metadata` its
    metadata. `is_main_result`: the cell's value (execute_result), not a
    display."""

    data: JSONObject
    metadata: JSONObject
    is_main_result: bool
    text: Optional[str] = None
    html: Optional[str] = None
    markdown: Optional[str] = None
    svg: Optional[str] = None
    png: Optional[bytes] = None
    jpeg: Optional[bytes] = None
    pdf: Optional[bytes] = None
    latex: Optional[str] = None
    json: Any = None
    javascript: Optional[str] = None
    extra: JSONObject = field(default_factory=dict)

    @classmethod
    def from_output(cls, output: JSONObject) -> Result:
        data = output.get("data")
        data = data if isinstance(data, dict) else {}
        metadata = output.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        return cls(data=data, metadata=metadata, is_main_result=output.get("output_type") == "execute_result",
                   text=_text(data.get("text/plain")), html=_text(data.get("text/html")),
                   markdown=_text(data.get("text/markdown")), svg=_text(data.get("image/svg+xml")),
                   png=_binary(data.get("image/png")), jpeg=_binary(data.get("image/jpeg")),
                   pdf=_binary(data.get("application/pdf")), latex=_text(data.get("text/latex")),
                   json=data.get("application/json"), javascript=_text(data.get("application/javascript")),
                   extra={k: v for k, v in data.items() if k not in _KNOWN_FORMATS})

    def formats(self) -> List[str]:
        """The attribute names that hold a value ("text", "png", ...), then
        the other MIME types of the bundle."""
        known = [name for mime, name in _KNOWN_FORMATS.items() if mime in self.data]
        return known + list(self.extra)

    def __str__(self) -> str:
        return self.text or ""


@dataclass
class ExecutionError:
    """The error the code raised: its class name, value and traceback (the
    kernel's lines, ANSI colours included, joined by newlines)."""

    name: str
    value: str
    traceback: str
    traceback_lines: List[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, value: JSONObject) -> ExecutionError:
        lines = [str(line) for line in value.get("traceback") or []]
        return cls(name=str(value.get("ename", "")), value=str(value.get("evalue", "")),
                   traceback="\n".join(lines), traceback_lines=lines)


@dataclass
class OutputMessage:
    """A piece of a stream, as given to on_stdout/on_stderr: `line` (with
    its newline, if it had one) and `error` (True for stderr)."""

    line: str
    error: bool = False

    def __str__(self) -> str:
        return self.line


@dataclass
class Logs:
    """What the code printed, in pieces (each line with its newline)."""

    stdout: List[str] = field(default_factory=list)
    stderr: List[str] = field(default_factory=list)


@dataclass
class Execution:
    """The outcome of run_code. `error` is set when the code raised (or
    the kernel aborted the cell); `truncated` when the gateway kept only
    part of the output (1 MiB per stream, 16 MiB of bundles)."""

    results: List[Result] = field(default_factory=list)
    logs: Logs = field(default_factory=Logs)
    error: Optional[ExecutionError] = None
    execution_count: Optional[int] = None
    msg_id: Optional[str] = None
    status: str = "ok"
    truncated: bool = False
    kernel_restarted: bool = False
    duration_ms: Optional[int] = None

    @property
    def text(self) -> Optional[str]:
        """The main result's text/plain (the cell's value), or None."""
        for result in self.results:
            if result.is_main_result:
                return result.text
        return None

    @classmethod
    def from_record(cls, record: JSONObject) -> Execution:
        """An Execution from the gateway's execution record."""
        error = None
        if isinstance(record.get("error"), dict):
            error = ExecutionError.from_json(record["error"])
        elif record.get("status") == "aborted":
            error = ExecutionError("ExecutionAborted", "the kernel aborted this execution", "")
        outputs = [o for o in record.get("outputs") or [] if isinstance(o, dict)]
        count = record.get("execution_count")
        return cls(results=[Result.from_output(o) for o in outputs],
                   logs=Logs(stdout=_pieces(record.get("stdout")), stderr=_pieces(record.get("stderr"))),
                   error=error, execution_count=count if isinstance(count, int) else None,
                   msg_id=record.get("msg_id"), status=str(record.get("status", "")),
                   truncated=bool(record.get("truncated")), kernel_restarted=bool(record.get("kernel_restarted")),
                   duration_ms=record.get("duration_ms"))


def _pieces(text: Any) -> List[str]:
    return text.splitlines(keepends=True) if isinstance(text, str) and text else []


OutputHandler = Callable[[OutputMessage], None]
ResultHandler = Callable[[Result], None]
ErrorHandler = Callable[[ExecutionError], None]


def deliver(execution: Execution, on_stdout: Optional[OutputHandler], on_stderr: Optional[OutputHandler],
            on_result: Optional[ResultHandler], on_error: Optional[ErrorHandler]) -> None:
    """Calls the handlers with what an execution produced, in the order the
    record keeps: stdout, stderr, the results, the error. (The gateway's
    HTTP execute answers once the code ended; it does not stream.)"""
    if on_stdout:
        for line in execution.logs.stdout:
            on_stdout(OutputMessage(line, False))
    if on_stderr:
        for line in execution.logs.stderr:
            on_stderr(OutputMessage(line, True))
    if on_result:
        for result in execution.results:
            on_result(result)
    if on_error and execution.error:
        on_error(execution.error)


@dataclass
class Context:
    """A code context: one kernel in the sandbox, with its own state.
    `language` is what the caller asked for; `kernel_name` the kernelspec."""

    id: str
    language: str
    kernel_name: str
