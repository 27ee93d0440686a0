// One HTTP request to the gateway: token header, JSON bodies, a deadline, and
// every non-2xx answer turned into a SandgateError.
import { SandgateError, errorFromResponse } from './errors.js';

export interface HttpOptions {
  /** Base URL ending in `/` (the gateway's base path included). */
  baseUrl: string;
  token: string | undefined;
  fetch: typeof globalThis.fetch;
}

export interface RequestOptions {
  /** Sent as JSON with Content-Type application/json. */
  json?: unknown;
  /** Sent as it is (file uploads). */
  body?: NonNullable<RequestInit['body']>;
  headers?: Record<string, string>;
  /** Cancels the request (the caller's signal); rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Client-side deadline; none when undefined. */
  timeoutMs?: number;
}

export function authHeaders(token: string | undefined): Record<string, string> {
  return token ? { Authorization: `token ${token}` } : {};
}

/** Sends a request; resolves with the response when its status is 2xx. */
export async function request(http: HttpOptions, method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
  const what = `${method} /${path}`;
  const headers: Record<string, string> = { ...authHeaders(http.token), ...opts.headers };
  let body: NonNullable<RequestInit['body']> | undefined = opts.body;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers['Content-Type'] = 'application/json';
  }
  const signals: AbortSignal[] = [];
  if (opts.signal) signals.push(opts.signal);
  const deadline = opts.timeoutMs !== undefined ? AbortSignal.timeout(opts.timeoutMs) : undefined;
  if (deadline) signals.push(deadline);
  const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
  let res: Response;
  try {
    res = await http.fetch(http.baseUrl + path, {
      method,
      headers,
      body,
      signal,
      // Node's fetch needs this to stream a ReadableStream body.
      ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
    } as RequestInit);
  } catch (e) {
    if (deadline?.aborted) throw new SandgateError(0, 'client_timeout', `${what}: no answer within ${opts.timeoutMs} ms`, what, { cause: e });
    if (opts.signal?.aborted) throw opts.signal.reason ?? e;
    throw new SandgateError(0, 'unreachable', `${what}: ${(e as Error).message}`, what, { cause: e });
  }
  if (!res.ok) throw await errorFromResponse(res, what);
  return res;
}

export async function requestJson<T>(http: HttpOptions, method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const res = await request(http, method, path, opts);
  const text = await res.text();
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new SandgateError(res.status, 'bad_response', `${method} /${path}: the answer is not JSON: ${text.slice(0, 200)}`, `${method} /${path}`, { cause: e });
  }
}

/**
 * Encodes a workspace-relative path for a URL, segment by segment. Absolute
 * paths and `.`/`..` segments are refused here (400, as the gateway would):
 * a URL parser would resolve them before the request left, into another path.
 */
export function encodePath(path: string): string {
  if (path.startsWith('/')) throw new SandgateError(400, 'invalid_path', `Absolute path refused: ${path} (paths are relative to the workspace)`);
  const segments = path.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '.' || s === '..')) throw new SandgateError(400, 'invalid_path', `Path with . or .. refused: ${path}`);
  return segments.map(encodeURIComponent).join('/');
}
