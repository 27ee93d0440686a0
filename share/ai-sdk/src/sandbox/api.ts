// The REST calls of one sandbox that the session makes besides SandgateClient's:
// its file tree (/fs), its processes and its ports (docs/api.md "The sandbox's
// file tree", "Processes", "Ports"). Paths are the sandbox's own, absolute.
import type { SandgateClient } from '../client.js';
import { SandgateError } from '../errors.js';
import { request, requestJson, type HttpOptions } from '../http.js';

/** `GET /fs/stat`: a path as the sandbox sees it. */
export interface PathStat {
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mode: number;
  mtime_ms: number;
  uid: number;
  gid: number;
  /** A link's target (with `follow=false`). */
  target?: string;
}

/** An entry of `GET /fs/list` (links are not followed). */
export interface PathEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mtime_ms: number;
}

/** Body of `POST /processes`. */
export interface ProcessRequest {
  /** A string runs with `bash -lc`; an array runs as argv. */
  cmd: string | string[];
  /** Absolute in the sandbox, or relative to /workspace. */
  cwd?: string;
  env?: Record<string, string>;
  /** Keep stdin open for writes. */
  stdin?: boolean;
  timeout_s?: number;
  buffer_bytes?: number;
}

/** A process as `POST /processes` and `GET /processes/{pid}` answer. */
export interface ProcessModel {
  /** The gateway's id of the process (`p3f9...`), used in its URLs. */
  id: string;
  /** The pid inside the sandbox. */
  pid: number;
  status: string;
  exit_code: number | null;
  signal: number | null;
  timed_out: boolean;
  oom: boolean;
}

/** `POST /port-urls`: a signed URL of one port. */
export interface PortUrl {
  url: string;
  base_url: string;
  token: string;
  port: number;
  route: 'host' | 'path';
}

/** A 404 about a path in the sandbox, as opposed to one about the sandbox (unknown, or gone). */
export function isMissingPath(e: unknown): boolean {
  return e instanceof SandgateError && e.status === 404 && e.reason === 'no_such_path';
}

function seg(id: string): string {
  if (!id || id === '.' || id === '..') throw new SandgateError(400, 'invalid_id', `Invalid id: ${JSON.stringify(id)}`);
  return encodeURIComponent(id);
}

export class SandboxApi {
  private readonly http: HttpOptions;
  private readonly wsBase: string;
  private readonly timeoutMs: number;
  private readonly base: string;

  constructor(
    client: SandgateClient,
    /** The sandbox's id. */
    readonly id: string
  ) {
    ({ http: this.http, wsBase: this.wsBase, timeoutMs: this.timeoutMs } = client.connection);
    this.base = `api/sandboxes/${seg(id)}`;
  }

  /** The gateway's token, for the attach WebSocket's header. */
  get token(): string | undefined {
    return this.http.token;
  }

  // --- The file tree ---------------------------------------------------------

  /** `GET /fs`: the response, whose body streams the file (or its lines, 1-based and inclusive). */
  read(path: string, opts: { signal?: AbortSignal; startLine?: number; endLine?: number } = {}): Promise<Response> {
    const q = new URLSearchParams({ path });
    if (opts.startLine !== undefined) q.set('start_line', String(opts.startLine));
    if (opts.endLine !== undefined) q.set('end_line', String(opts.endLine));
    // No deadline: it would cut a long body short. The caller's signal ends it.
    return request(this.http, 'GET', `${this.base}/fs?${q}`, { signal: opts.signal });
  }

  /** `PUT /fs`: the body streamed into the file, parents made; it takes the path's name once complete. */
  async write(path: string, body: ReadableStream<Uint8Array> | Uint8Array, signal?: AbortSignal): Promise<void> {
    await request(this.http, 'PUT', `${this.base}/fs?${new URLSearchParams({ path })}`, {
      body: body as NonNullable<RequestInit['body']>,
      headers: { 'Content-Type': 'application/octet-stream' },
      signal,
    });
  }

  /** `GET /fs/stat`, following links unless `follow` is false. */
  stat(path: string, follow: boolean, signal?: AbortSignal): Promise<PathStat> {
    const q = new URLSearchParams({ path });
    if (!follow) q.set('follow', 'false');
    return requestJson(this.http, 'GET', `${this.base}/fs/stat?${q}`, { signal, timeoutMs: this.timeoutMs });
  }

  /** `GET /fs/list`: a directory's entries (409 when the path is no directory). */
  list(path: string, signal?: AbortSignal): Promise<PathEntry[]> {
    return requestJson(this.http, 'GET', `${this.base}/fs/list?${new URLSearchParams({ path })}`, { signal, timeoutMs: this.timeoutMs });
  }

  /** `DELETE /fs`: a file, a link, or an empty directory. */
  /** `DELETE /fs`: a file or link; a directory is refused (409) by the gateway itself. */
  async remove(path: string, signal?: AbortSignal): Promise<void> {
    const query = new URLSearchParams({ path, files_only: 'true' });
    await request(this.http, 'DELETE', `${this.base}/fs?${query}`, { signal, timeoutMs: this.timeoutMs });
  }

  // --- Processes -------------------------------------------------------------

  /** `POST /processes`: starts it; it runs until it ends, whoever is attached. */
  startProcess(body: ProcessRequest, signal?: AbortSignal): Promise<ProcessModel> {
    return requestJson(this.http, 'POST', `${this.base}/processes`, { json: body, signal, timeoutMs: this.timeoutMs });
  }

  /** `POST /processes/{pid}/signal` to its process group, by name (`KILL`, `INT`, ...). */
  async signalProcess(processId: string, signal: string): Promise<void> {
    await request(this.http, 'POST', `${this.base}/processes/${seg(processId)}/signal`, { json: { signal }, timeoutMs: this.timeoutMs });
  }

  /** `GET /processes/{pid}/wait`: the process once it ended, or still running after `timeoutS`. */
  waitProcess(processId: string, timeoutS: number): Promise<ProcessModel> {
    return requestJson(this.http, 'GET', `${this.base}/processes/${seg(processId)}/wait?timeout_s=${timeoutS}`, {
      timeoutMs: (timeoutS + 30) * 1000,
    });
  }

  /** `DELETE /processes/{pid}`: kills it if it runs, and forgets it. */
  async deleteProcess(processId: string): Promise<void> {
    await request(this.http, 'DELETE', `${this.base}/processes/${seg(processId)}`, { timeoutMs: this.timeoutMs });
  }

  /** The attach WebSocket's URL of a process. */
  attachUrl(processId: string): string {
    return `${this.wsBase}${this.base}/processes/${seg(processId)}/attach`;
  }

  // --- Ports -----------------------------------------------------------------

  /** `GET /ports`: what listens in the sandbox. */
  listPorts(signal?: AbortSignal): Promise<Array<{ port: number; address: string }>> {
    return requestJson(this.http, 'GET', `${this.base}/ports`, { signal, timeoutMs: this.timeoutMs });
  }

  /** `POST /port-urls`: a URL of one port, signed for `ttlS` seconds. */
  signPortUrl(port: number, route: 'host' | 'path', ttlS: number | undefined, signal?: AbortSignal): Promise<PortUrl> {
    const json: Record<string, unknown> = { port, route };
    if (ttlS !== undefined) json.ttl_s = ttlS;
    return requestJson(this.http, 'POST', `${this.base}/port-urls`, { json, signal, timeoutMs: this.timeoutMs });
  }
}
