"""HTTP to one gateway: its URL and token, one request per connection
(http.client), JSON in and out, and the mapping of the gateway's JSON errors
to the exceptions of errors.py."""

from __future__ import annotations

import builtins
import http.client
import json
import os
import socket
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import IO, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, Union

from . import errors

DEFAULT_URL = "http://127.0.0.1:8888"
DEFAULT_REQUEST_TIMEOUT_S = 60.0
USER_AGENT = "sandgate-python/0.1.0"
STREAM_CHUNK_BYTES = 64 * 1024

JSONObject = Dict[str, Any]
Body = Union[bytes, IO[bytes], None]
Query = Sequence[Tuple[str, str]]


@dataclass
class Response:
    """A whole response: status, headers and body."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self, what: str) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise errors.SandgateError(f"the gateway's answer is not JSON ({e}): {self.body[:200]!r}",
                                       what=what) from e

    def json_object(self, what: str) -> JSONObject:
        value = self.json(what)
        if not isinstance(value, dict):
            raise errors.SandgateError(f"the gateway answered {type(value).__name__}, not a JSON object", what=what)
        return value

    def json_list(self, what: str) -> List[JSONObject]:
        value = self.json(what)
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise errors.SandgateError("the gateway did not answer a JSON array of objects", what=what)
        return value


def segment(value: str) -> str:
    """An id as one path segment (a caller's id never reaches another route)."""
    return urllib.parse.quote(value, safe="")


class Connection:
    """Where the gateway is and how to authenticate; every request opens its
    own connection, so one Connection serves any number of threads."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        """`url` defaults to $SANDGATE_URL (else http://127.0.0.1:8888),
        `token` to $SANDGATE_TOKEN; `request_timeout` (seconds) bounds each
        request that has no longer bound of its own."""
        self.url = (url or os.environ.get("SANDGATE_URL") or DEFAULT_URL).rstrip("/") + "/"
        self.token = token if token is not None else os.environ.get("SANDGATE_TOKEN")
        self.request_timeout = request_timeout
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise errors.InvalidArgumentError(f"not an http:// or https:// URL: {self.url!r}")
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port
        self._base_path = parsed.path
        self._ssl_context = ssl_context if ssl_context is not None else (
            ssl.create_default_context() if self._https else None)

    def _open(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._ssl_context)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _target(self, path: str, query: Optional[Query]) -> str:
        target = self._base_path + path
        if query:
            target += "?" + urllib.parse.urlencode(list(query), quote_via=urllib.parse.quote)
        return target

    def _headers(self, extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
        headers = {"User-Agent": USER_AGENT}
        if self.token:
            headers["Authorization"] = f"token {self.token}"
        headers.update(extra or {})
        return headers

    def send(self, method: str, path: str, *, what: str, query: Optional[Query] = None, json_body: Any = None,
             body: Body = None, headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
             sandbox_id: Optional[str] = None, file_path: Optional[str] = None,
             ) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Sends a request and reads the status and headers; the caller
        reads the body and closes the connection. A status of 400 or above
        raises (errors.py), after reading the error body. `what` describes
        the call for error messages; `sandbox_id`/`file_path` go on them."""
        hdrs = self._headers(headers)
        data: Body = body
        if json_body is not None:
            data = json.dumps(json_body).encode()
            hdrs["Content-Type"] = "application/json"
        seconds = self.request_timeout if timeout is None else timeout
        conn = self._open(seconds)
        try:
            conn.request(method, self._target(path, query), body=data, headers=hdrs)
            resp = conn.getresponse()
            if resp.status >= 400:
                raise error_from_response(resp.status, resp.getheader("Retry-After"), resp.read(), what=what,
                                          sandbox_id=sandbox_id, path=file_path)
            return conn, resp
        except errors.SandgateError:
            conn.close()
            raise
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise self._transport_error(e, seconds, what, sandbox_id, file_path) from e

    def _transport_error(self, e: Exception, seconds: float, what: str, sandbox_id: Optional[str],
                         file_path: Optional[str]) -> errors.SandgateError:
        """The error for a connection that failed, broke or went silent."""
        if isinstance(e, (socket.timeout, builtins.TimeoutError)):
            return errors.TimeoutError(f"the gateway at {self.url} sent nothing for {seconds:g} s", what=what,
                                       sandbox_id=sandbox_id, path=file_path)
        return errors.APIConnectionError(f"no answer from the gateway at {self.url}: {e!r}", what=what,
                                         sandbox_id=sandbox_id, path=file_path)

    def request(self, method: str, path: str, *, what: str, query: Optional[Query] = None, json_body: Any = None,
                body: Body = None, headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
                sandbox_id: Optional[str] = None, file_path: Optional[str] = None) -> Response:
        """A request whose response is read whole."""
        conn, resp = self.send(method, path, what=what, query=query, json_body=json_body, body=body,
                               headers=headers, timeout=timeout, sandbox_id=sandbox_id, file_path=file_path)
        try:
            return Response(resp.status, resp.headers, resp.read())
        except (OSError, http.client.HTTPException) as e:
            seconds = self.request_timeout if timeout is None else timeout
            raise self._transport_error(e, seconds, what, sandbox_id, file_path) from e
        finally:
            conn.close()

    def stream(self, method: str, path: str, *, what: str, query: Optional[Query] = None,
               timeout: Optional[float] = None, sandbox_id: Optional[str] = None,
               file_path: Optional[str] = None) -> Iterator[bytes]:
        """A request whose body comes as chunks, as it arrives. The request
        is sent at once (errors raise here); the connection closes when the
        iterator ends or is closed."""
        conn, resp = self.send(method, path, what=what, query=query, timeout=timeout, sandbox_id=sandbox_id,
                               file_path=file_path)
        seconds = self.request_timeout if timeout is None else timeout
        return self._chunks(conn, resp, seconds, what, sandbox_id, file_path)

    def _chunks(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, seconds: float, what: str,
                sandbox_id: Optional[str], file_path: Optional[str]) -> Iterator[bytes]:
        try:
            while True:
                chunk = resp.read(STREAM_CHUNK_BYTES)
                if not chunk:
                    return
                yield chunk
        except (OSError, http.client.HTTPException) as e:
            raise self._transport_error(e, seconds, what, sandbox_id, file_path) from e
        finally:
            conn.close()


_ERROR_BY_STATUS: Dict[int, Type[errors.SandgateError]] = {
    400: errors.InvalidArgumentError,
    401: errors.AuthenticationError,
    404: errors.NotFoundError,
    409: errors.ConflictError,
    413: errors.PayloadTooLargeError,
    429: errors.RateLimitError,
}


def error_from_response(status: int, retry_after: Optional[str], body: bytes, *, what: str,
                        sandbox_id: Optional[str] = None, path: Optional[str] = None) -> errors.SandgateError:
    """The exception for an error response: its class by status (and, for
    a 403, by reason), with the gateway's reason and message."""
    reason: Optional[str] = None
    message = body.decode("utf-8", "replace").strip() or http.client.responses.get(status, "error")
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
            message = parsed["message"]
            reason = parsed.get("reason") if isinstance(parsed.get("reason"), str) else None
    except ValueError:
        pass
    if status == 503:
        try:
            retry_s: Optional[float] = float(retry_after) if retry_after else None
        except ValueError:
            retry_s = None
        return errors.UnavailableError(message, retry_after_s=retry_s, status=status, reason=reason, what=what,
                                       sandbox_id=sandbox_id, path=path)
    if status == 403:
        # The gateway answers a wrong token with 403 "Invalid token" and the
        # same reason ("Forbidden") as other refusals.
        if reason == "network_refused":
            kind: Type[errors.SandgateError] = errors.NetworkRefusedError
        elif message == "Invalid token":
            kind = errors.AuthenticationError
        else:
            kind = errors.PermissionDeniedError
    else:
        kind = _ERROR_BY_STATUS.get(status, errors.SandgateError)
    return kind(message, status=status, reason=reason, what=what, sandbox_id=sandbox_id, path=path)
