// SandgateClient: the gateway's HTTP API (docs/api.md) and the Jupyter
// channels WebSocket. It holds no sandbox or kernel objects: every call takes
// the id, which is the durable handle a caller keeps in its own store.
import { SandgateError, networkError } from './errors.js';
import { ExecutionCollector, type ExecuteCallbacks } from './execution.js';
import { KernelChannel } from './kernel-channel.js';
import { encodePath, request, requestJson, type HttpOptions } from './http.js';
import type { WebSocketImpl } from './websocket.js';
import type {
  CommandRequest,
  CommandResult,
  CreateSandboxRequest,
  ExecuteResult,
  FileEntry,
  KernelModel,
  KernelspecList,
  Network,
  Sandbox,
  StartKernelRequest,
  UploadedFile,
} from './types.js';

export interface SandgateClientOptions {
  /** The gateway's URL, e.g. `http://127.0.0.1:8888` (a base path is kept). */
  url: string;
  /** The gateway's token; sent as `Authorization: token ...`. */
  token?: string;
  /** A fetch implementation; the global one by default. */
  fetch?: typeof globalThis.fetch;
  /** Which WebSocket to use: `auto` (default) takes `ws` in Node and the global one elsewhere. */
  webSocket?: WebSocketImpl;
  /**
   * How `execute` runs code: `http` (`POST /api/kernels/{id}/execute`, the
   * gateway enforces the timeout), `websocket` (the channels; the timeout is
   * an interrupt sent by this client), or `auto` (default): HTTP unless
   * streaming callbacks are given, and the WebSocket on a gateway that has no
   * REST execute.
   */
  executeTransport?: 'auto' | 'http' | 'websocket';
  /** Deadline of ordinary requests, in ms (default 120000: starting a kernel can take a while). */
  requestTimeoutMs?: number;
}

export interface ExecuteOptions extends ExecuteCallbacks {
  /** The kernel is interrupted after this many seconds; its state survives. */
  timeoutS?: number;
  /** Interrupts the code when aborted (the result then carries the KeyboardInterrupt). */
  signal?: AbortSignal;
  /** Overrides the client's executeTransport for this call. */
  transport?: 'auto' | 'http' | 'websocket';
  /** WebSocket path: seconds to wait after an interrupt before restarting the kernel (default 10). */
  interruptGraceS?: number;
}

/** Bounds of what the WebSocket path keeps (the REST path is bounded by the gateway). */
export const CLIENT_STREAM_CHARS = 1024 * 1024;
export const CLIENT_OUTPUT_BYTES = 32 * 1024 * 1024;
const CONNECT_TIMEOUT_MS = 30_000;

/** An id as one URL path segment; `.` and `..` would be resolved away by the URL parser. */
function seg(id: string): string {
  if (!id || id === '.' || id === '..') throw new SandgateError(400, 'invalid_id', `Invalid id: ${JSON.stringify(id)}`);
  return encodeURIComponent(id);
}
const RECOVERY_POLL_MS = 500;

export class SandgateClient {
  private readonly http: HttpOptions;
  private readonly wsBase: string;
  private readonly webSocket: WebSocketImpl;
  private readonly transport: 'auto' | 'http' | 'websocket';
  private readonly timeoutMs: number;
  /** False once the gateway answered that it has no REST execute. */
  private restExecute = true;

  constructor(options: SandgateClientOptions) {
    const base = new URL(options.url);
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    base.search = '';
    base.hash = '';
    this.http = { baseUrl: base.toString(), token: options.token, fetch: options.fetch ?? globalThis.fetch.bind(globalThis) };
    const ws = new URL(base.toString());
    ws.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
    this.wsBase = ws.toString();
    this.webSocket = options.webSocket ?? 'auto';
    this.transport = options.executeTransport ?? 'auto';
    this.timeoutMs = options.requestTimeoutMs ?? 120_000;
  }

  /** The base URL every path is resolved against (ends with `/`). */
  get url(): string {
    return this.http.baseUrl;
  }

  /**
   * @internal What requests go out with (base URL, token, fetch), the
   * WebSocket base URL and the deadline of ordinary requests: the sandbox
   * session (`@sandgate/ai-sdk/sandbox`) builds its own calls on them.
   */
  get connection(): { http: HttpOptions; wsBase: string; timeoutMs: number } {
    return { http: this.http, wsBase: this.wsBase, timeoutMs: this.timeoutMs };
  }

  // --- Sandboxes -------------------------------------------------------------

  /**
   * `POST /api/sandboxes`. A `network` above the operator's ceiling is a
   * `NetworkRefusedError` (403, naming the host, cidr, port or limit), a
   * malformed one an `InvalidNetworkError` (400).
   */
  async createSandbox(body: CreateSandboxRequest = {}): Promise<Sandbox> {
    try {
      return await requestJson(this.http, 'POST', 'api/sandboxes', { json: body, timeoutMs: this.timeoutMs });
    } catch (e) {
      throw body.network === undefined ? e : networkError(e, false);
    }
  }

  /** `GET /api/sandboxes/{id}`; a SandgateError with status 404 (reason `expired`, `culled`, ...) when gone. */
  async getSandbox(id: string): Promise<Sandbox> {
    return requestJson(this.http, 'GET', `api/sandboxes/${seg(id)}`, { timeoutMs: this.timeoutMs });
  }

  /** `GET /api/sandboxes`, keeping those whose metadata has every given pair. */
  async listSandboxes(metadata: Record<string, string> = {}): Promise<Sandbox[]> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(metadata)) q.append(`metadata.${k}`, v);
    const query = q.toString();
    return requestJson(this.http, 'GET', 'api/sandboxes' + (query ? `?${query}` : ''), { timeoutMs: this.timeoutMs });
  }

  /** `PATCH /api/sandboxes/{id}`: the sandbox now expires `ttlS` seconds from now. */
  async setSandboxTtl(id: string, ttlS: number): Promise<Sandbox> {
    return requestJson(this.http, 'PATCH', `api/sandboxes/${seg(id)}`, { json: { ttl_s: ttlS }, timeoutMs: this.timeoutMs });
  }

  /**
   * `PATCH /api/sandboxes/{id}/network`: the sandbox's network from now on;
   * new connections follow it at once, open ones it no longer allows are
   * closed. Above the operator's ceiling: `NetworkRefusedError` (403, its
   * `host` names the host); malformed: `InvalidNetworkError` (400). A sandbox
   * created without egress may not be able to change its mode (409, a
   * SandgateError whose message says so).
   */
  async setSandboxNetwork(id: string, network: Network): Promise<Sandbox> {
    const path = `api/sandboxes/${seg(id)}/network`;
    try {
      return await requestJson(this.http, 'PATCH', path, { json: network, timeoutMs: this.timeoutMs });
    } catch (e) {
      throw networkError(e, true);
    }
  }

  /** `DELETE /api/sandboxes/{id}`: kills its kernels and commands and frees everything. */
  async deleteSandbox(id: string): Promise<void> {
    await request(this.http, 'DELETE', `api/sandboxes/${seg(id)}`, { timeoutMs: this.timeoutMs });
  }

  // --- Kernels ("contexts") --------------------------------------------------

  /** `GET /api/kernelspecs`: the gateway's default kernelspec and every kernelspec by name. */
  async listKernelspecs(): Promise<KernelspecList> {
    return requestJson(this.http, 'GET', 'api/kernelspecs', { timeoutMs: this.timeoutMs });
  }

  /** `POST /api/kernels`: a kernel in `sandbox_id`, or in a sandbox of its own without it. */
  async startKernel(body: StartKernelRequest = {}): Promise<KernelModel> {
    return requestJson(this.http, 'POST', 'api/kernels', { json: body, timeoutMs: this.timeoutMs });
  }

  async getKernel(id: string): Promise<KernelModel> {
    return requestJson(this.http, 'GET', `api/kernels/${seg(id)}`, { timeoutMs: this.timeoutMs });
  }

  async listKernels(): Promise<KernelModel[]> {
    return requestJson(this.http, 'GET', 'api/kernels', { timeoutMs: this.timeoutMs });
  }

  async deleteKernel(id: string): Promise<void> {
    await request(this.http, 'DELETE', `api/kernels/${seg(id)}`, { timeoutMs: this.timeoutMs });
  }

  /** `POST /api/kernels/{id}/interrupt`: SIGINT (or the kernel's interrupt_request); state survives. */
  async interruptKernel(id: string): Promise<void> {
    await request(this.http, 'POST', `api/kernels/${seg(id)}/interrupt`, { timeoutMs: this.timeoutMs });
  }

  /** `POST /api/kernels/{id}/restart`: state is lost. */
  async restartKernel(id: string): Promise<KernelModel> {
    return requestJson(this.http, 'POST', `api/kernels/${seg(id)}/restart`, { timeoutMs: this.timeoutMs });
  }

  // --- Execution -------------------------------------------------------------

  /**
   * Runs code in a kernel and resolves when it ends (`status` ok, error or
   * timeout). With `timeoutS` the kernel is interrupted at the deadline and
   * keeps its state; if it does not come back it is restarted
   * (`kernel_restarted: true`).
   */
  async execute(kernelId: string, code: string, options: ExecuteOptions = {}): Promise<ExecuteResult> {
    seg(kernelId);
    const streaming = !!(options.onStdout || options.onStderr || options.onDisplay || options.onResult || options.onError);
    const mode = options.transport ?? this.transport;
    const useHttp = mode === 'http' || (mode === 'auto' && !streaming && this.restExecute);
    if (useHttp) {
      try {
        return await this.executeHttp(kernelId, code, options);
      } catch (e) {
        if (mode !== 'auto' || !(e instanceof SandgateError) || e.status !== 404) throw e;
        // 404 for the kernel itself is the answer; 404 for the path means this
        // gateway has no REST execute: the kernel then still answers GET.
        await this.getKernel(kernelId);
        this.restExecute = false;
      }
    }
    return this.executeWebSocket(kernelId, code, options);
  }

  /** `GET /api/kernels/{id}/executions/{msg_id}`: the record of an execute, sent by any client. */
  async getExecution(kernelId: string, msgId: string): Promise<ExecuteResult> {
    return requestJson(this.http, 'GET', `api/kernels/${seg(kernelId)}/executions/${seg(msgId)}`, {
      timeoutMs: this.timeoutMs,
    });
  }

  private async executeHttp(kernelId: string, code: string, options: ExecuteOptions): Promise<ExecuteResult> {
    const body: Record<string, unknown> = { code };
    if (options.timeoutS !== undefined) body.timeout_s = options.timeoutS;
    const onAbort = () => void this.interruptKernel(kernelId).catch(() => {});
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (options.signal?.aborted) throw options.signal.reason;
      // The gateway answers when the code ends or at timeout_s plus its grace; this deadline is only a backstop.
      const timeoutMs = options.timeoutS !== undefined ? (options.timeoutS + 120) * 1000 : undefined;
      return await requestJson<ExecuteResult>(this.http, 'POST', `api/kernels/${seg(kernelId)}/execute`, { json: body, timeoutMs });
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  private async executeWebSocket(kernelId: string, code: string, options: ExecuteOptions): Promise<ExecuteResult> {
    if (options.signal?.aborted) throw options.signal.reason;
    let channel: KernelChannel;
    try {
      channel = await KernelChannel.open(this.wsBase, kernelId, this.http.token, this.webSocket, CONNECT_TIMEOUT_MS);
    } catch (e) {
      // A browser WebSocket hides the status of a refused upgrade: ask for the kernel (404 when gone).
      if (e instanceof SandgateError && e.status === 0) await this.getKernel(kernelId);
      throw e;
    }
    try {
      const collector = new ExecutionCollector(
        globalThis.crypto.randomUUID().replace(/-/g, ''),
        { streamChars: CLIENT_STREAM_CHARS, outputBytes: CLIENT_OUTPUT_BYTES },
        options
      );
      return await new Promise<ExecuteResult>((resolve, reject) => {
        let timedOut = false;
        let settled = false;
        const timers: ReturnType<typeof setTimeout>[] = [];
        const finish = (fn: () => void) => {
          if (settled) return;
          settled = true;
          timers.forEach(clearTimeout);
          unlisten();
          unclose();
          options.signal?.removeEventListener('abort', onAbort);
          fn();
        };
        const interruptThenRestart = () => {
          this.interruptKernel(kernelId).catch(() => {});
          const graceMs = (options.interruptGraceS ?? 10) * 1000;
          timers.push(
            setTimeout(() => {
              // The kernel did not come back from the interrupt: restart it (state is lost).
              this.restartKernel(kernelId).then(
                () => finish(() => resolve(collector.snapshot(timedOut, true))),
                (e) => finish(() => reject(e))
              );
            }, graceMs)
          );
        };
        const onAbort = () => interruptThenRestart();
        const unlisten = channel.listen(collector.msgId, (m) => {
          if (collector.feed(m)) finish(() => resolve(collector.snapshot(timedOut, false)));
        });
        const unclose = channel.onClose((why) => {
          // The connection dropped mid-execution: the gateway keeps the record.
          this.recover(kernelId, collector.msgId, options.timeoutS).then(
            (r) => finish(() => resolve(r)),
            () => finish(() => reject(why))
          );
        });
        options.signal?.addEventListener('abort', onAbort, { once: true });
        if (options.timeoutS !== undefined) {
          timers.push(
            setTimeout(() => {
              timedOut = true;
              interruptThenRestart();
            }, options.timeoutS * 1000)
          );
        }
        channel.send(
          'shell',
          'execute_request',
          { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: false, stop_on_error: false },
          collector.msgId
        );
      });
    } finally {
      channel.close();
    }
  }

  /** Polls the gateway's execution record until the execute ends. */
  private async recover(kernelId: string, msgId: string, timeoutS: number | undefined): Promise<ExecuteResult> {
    const end = Date.now() + ((timeoutS ?? 600) + 60) * 1000;
    while (Date.now() < end) {
      const r = await this.getExecution(kernelId, msgId);
      if (r.status !== 'running') return r;
      await new Promise((res) => setTimeout(res, RECOVERY_POLL_MS));
    }
    throw new SandgateError(0, 'client_timeout', `Execution ${msgId} still running`);
  }

  // --- Files -----------------------------------------------------------------

  /** `PUT /api/sandboxes/{id}/files/{path}`; parent directories are created. */
  async uploadFile(sandboxId: string, path: string, content: Uint8Array | ArrayBuffer | Blob | string | ReadableStream<Uint8Array>): Promise<UploadedFile> {
    return requestJson(this.http, 'PUT', `api/sandboxes/${seg(sandboxId)}/files/${encodePath(path)}`, {
      body: content as NonNullable<RequestInit['body']>,
      headers: { 'Content-Type': 'application/octet-stream' },
      timeoutMs: this.timeoutMs,
    });
  }

  /** `GET /api/sandboxes/{id}/files/{path}`: the file's bytes. */
  async downloadFile(sandboxId: string, path: string): Promise<Uint8Array> {
    const res = await request(this.http, 'GET', `api/sandboxes/${seg(sandboxId)}/files/${encodePath(path)}`, {
      timeoutMs: this.timeoutMs,
    });
    return new Uint8Array(await res.arrayBuffer());
  }

  /** Lists a directory of the workspace (the workspace itself by default). */
  async listFiles(sandboxId: string, path = ''): Promise<FileEntry[]> {
    const p = encodePath(path);
    return requestJson(this.http, 'GET', `api/sandboxes/${seg(sandboxId)}/files${p ? '/' + p : ''}`, {
      timeoutMs: this.timeoutMs,
    });
  }

  /** Removes a file, or a directory with its content. */
  async deleteFile(sandboxId: string, path: string): Promise<void> {
    await request(this.http, 'DELETE', `api/sandboxes/${seg(sandboxId)}/files/${encodePath(path)}`, {
      timeoutMs: this.timeoutMs,
    });
  }

  // --- Commands --------------------------------------------------------------

  /** `POST /api/sandboxes/{id}/commands`: runs a command in the sandbox and answers when it ends. */
  async runCommand(sandboxId: string, body: CommandRequest, options: { signal?: AbortSignal } = {}): Promise<CommandResult> {
    const timeoutMs = body.timeout_s !== undefined ? (body.timeout_s + 60) * 1000 : undefined;
    return requestJson(this.http, 'POST', `api/sandboxes/${seg(sandboxId)}/commands`, {
      json: body,
      timeoutMs,
      signal: options.signal,
    });
  }
}
