"""sandbox.files: the sandbox's file tree as the sandbox sees it (docs/api.md
"The sandbox's file tree", /api/sandboxes/{id}/fs). Paths are absolute in
the sandbox, or relative to /workspace; every operation runs as the
sandbox's user."""

from __future__ import annotations

import posixpath
from typing import IO, Any, Iterator, List, Literal, Optional, Union, overload

from . import errors
from ._http import Connection, JSONObject, segment
from .models import WORKSPACE, EntryInfo, WriteInfo, parse_mtime_ms


def absolute(path: str) -> str:
    """A path as the sandbox sees it: relative ones are under /workspace."""
    return posixpath.normpath(posixpath.join(WORKSPACE, path))


class Files:
    """The file operations of one sandbox (sandbox.files)."""

    def __init__(self, sandbox_id: str, connection: Connection) -> None:
        self._sandbox_id = sandbox_id
        self._conn = connection
        self._base = f"api/sandboxes/{segment(sandbox_id)}/fs"

    def _what(self, verb: str, path: str) -> str:
        return f"{verb} {path!r} in sandbox {self._sandbox_id}"

    @overload
    def read(self, path: str, format: Literal["text"] = "text", *,
             request_timeout: Optional[float] = None) -> str: ...

    @overload
    def read(self, path: str, format: Literal["bytes"], *, request_timeout: Optional[float] = None) -> bytes: ...

    @overload
    def read(self, path: str, format: Literal["stream"], *,
             request_timeout: Optional[float] = None) -> Iterator[bytes]: ...

    def read(self, path: str, format: Literal["text", "bytes", "stream"] = "text", *,
             request_timeout: Optional[float] = None) -> Union[str, bytes, Iterator[bytes]]:
        """A file's content: "text" (UTF-8, decoded strictly), "bytes", or
        "stream" (an iterator of chunks as they arrive, for large files).
        A directory raises ConflictError, a missing path NotFoundError."""
        what = self._what("read", path)
        if format == "stream":
            return self._conn.stream("GET", self._base, what=what, query=[("path", path)], timeout=request_timeout,
                                     sandbox_id=self._sandbox_id, file_path=path)
        if format not in ("text", "bytes"):
            raise errors.InvalidArgumentError(f'format must be "text", "bytes" or "stream", not {format!r}',
                                              what=what)
        body = self._conn.request("GET", self._base, what=what, query=[("path", path)], timeout=request_timeout,
                                  sandbox_id=self._sandbox_id, file_path=path).body
        return body.decode("utf-8") if format == "text" else body

    def write(self, path: str, data: Union[str, bytes, IO[bytes]], *,
              request_timeout: Optional[float] = None) -> WriteInfo:
        """Writes a file (str as UTF-8; a binary file object is streamed),
        making its parent directories; replaces one that exists. The file
        takes its name only once complete."""
        body: Union[bytes, IO[bytes]] = data.encode("utf-8") if isinstance(data, str) else data
        resp = self._conn.request("PUT", self._base, what=self._what("write", path), query=[("path", path)],
                                  body=body, headers={"Content-Type": "application/octet-stream"},
                                  timeout=request_timeout, sandbox_id=self._sandbox_id, file_path=path)
        answer = resp.json_object(self._what("write", path))
        full = absolute(path)
        return WriteInfo(name=posixpath.basename(full), path=full, size=int(answer.get("size") or 0))

    def list(self, path: str = ".", depth: int = 1) -> List[EntryInfo]:
        """The entries of a directory (links not followed); with depth > 1,
        those of its subdirectories too, each directory before its content."""
        if depth < 1:
            raise errors.InvalidArgumentError(f"depth must be at least 1, not {depth}",
                                              what=self._what("list", path))
        what = self._what("list", path)
        entries = self._conn.request("GET", f"{self._base}/list", what=what, query=[("path", path)],
                                     sandbox_id=self._sandbox_id, file_path=path).json_list(what)
        out: List[EntryInfo] = []
        for entry in entries:
            info = _entry(entry, posixpath.join(absolute(path), str(entry.get("name", ""))))
            out.append(info)
            if depth > 1 and info.is_dir:
                out.extend(self.list(info.path, depth - 1))
        return out

    def get_info(self, path: str, *, follow_symlinks: bool = True) -> EntryInfo:
        """A stat of the path (of a link itself with follow_symlinks=False)."""
        what = self._what("stat", path)
        query = [("path", path)] + ([] if follow_symlinks else [("follow", "false")])
        stat = self._conn.request("GET", f"{self._base}/stat", what=what, query=query, sandbox_id=self._sandbox_id,
                                  file_path=path).json_object(what)
        return _entry(stat, absolute(path))

    def exists(self, path: str) -> bool:
        """True if the path exists (a link: if what it leads to exists)."""
        try:
            self.get_info(path)
        except errors.NotFoundError as e:
            if e.reason != "no_such_path":
                raise  # the sandbox itself is gone
            return False
        return True

    def remove(self, path: str) -> None:
        """Removes a file, a link, or a directory with its content."""
        self._conn.request("DELETE", self._base, what=self._what("remove", path),
                           query=[("path", path), ("recursive", "true")], sandbox_id=self._sandbox_id,
                           file_path=path)

    def rename(self, old_path: str, new_path: str, *, overwrite: bool = False) -> EntryInfo:
        """Moves a path within one filesystem (/workspace to /tmp is a
        ConflictError, as is an existing target without overwrite)."""
        what = f"rename {old_path!r} to {new_path!r} in sandbox {self._sandbox_id}"
        self._conn.request("POST", f"{self._base}/rename", what=what,
                           json_body={"from": old_path, "to": new_path, "overwrite": overwrite},
                           sandbox_id=self._sandbox_id, file_path=old_path)
        return self.get_info(new_path, follow_symlinks=False)

    def make_dir(self, path: str) -> bool:
        """Makes a directory and its parents: True if it was made, False if
        it was there already."""
        what = self._what("make directory", path)
        try:
            self._conn.request("POST", f"{self._base}/mkdir", what=what, json_body={"path": path, "parents": False},
                               sandbox_id=self._sandbox_id, file_path=path)
            return True
        except errors.ConflictError:
            if self.get_info(path).is_dir:
                return False
            raise
        except errors.NotFoundError as e:
            if e.reason != "no_such_path":
                raise
        self._conn.request("POST", f"{self._base}/mkdir", what=what, json_body={"path": path, "parents": True},
                           sandbox_id=self._sandbox_id, file_path=path)
        return True


def _entry(value: JSONObject, path: str) -> EntryInfo:
    target: Any = value.get("target")
    return EntryInfo(name=str(value.get("name") or posixpath.basename(path)), type=str(value.get("type", "")),
                     path=path, size=int(value.get("size") or 0), modified_time=parse_mtime_ms(value.get("mtime_ms")),
                     mode=value.get("mode"), uid=value.get("uid"), gid=value.get("gid"),
                     symlink_target=target if isinstance(target, str) else None)
