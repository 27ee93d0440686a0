// A process of the sandbox as the AI SDK's SandboxProcess: started with
// POST /processes, then read and fed through its attach WebSocket
// (docs/api.md "Processes"): binary messages 1+bytes (stdout) and 2+bytes
// (stderr) become two ReadableStreams, stdin is a WritableStream sent as
// 0+bytes and ended with close_stdin, and the exit message settles wait().
// Flow control: while either output stream holds its high-water mark unread,
// the socket is paused, so the gateway (and then the process) waits, as on a
// pipe nobody reads; cancel a stream you do not want.
import WebSocket from 'ws';
import { SandgateError } from '../errors.js';
import { authHeaders } from '../http.js';
import type { ProcessModel, ProcessRequest, SandboxApi } from './api.js';

/** Bytes an output stream holds unread before the socket is paused. */
export const OUTPUT_HIGH_WATER_BYTES = 1024 * 1024;
/** Largest stdin message the gateway takes (4 MiB with its stream byte). */
const MAX_STDIN_MESSAGE_BYTES = 4 * 1024 * 1024;
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const CONNECT_TIMEOUT_MS = 30_000;
/** Seconds one `GET .../wait` waits when the attachment was lost. */
const WAIT_POLL_S = 30;

/** The exit code a shell would show: the code, or 128 + the signal's number. */
export function exitCodeOf(exitCode: number | null, signal: number | null): number {
  return exitCode ?? 128 + (signal ?? 0);
}

/** One output stream, fed by the socket. */
class Output {
  readonly stream: ReadableStream<Uint8Array>;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private done = false;

  constructor(onPull: () => void) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          this.controller = c;
        },
        pull: () => onPull(),
        cancel: () => {
          this.done = true;
          onPull();
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: OUTPUT_HIGH_WATER_BYTES })
    );
  }

  /** True while its reader is behind by the high-water mark. */
  get full(): boolean {
    return !this.done && (this.controller.desiredSize ?? 0) <= 0;
  }

  push(bytes: Uint8Array): void {
    if (!this.done) this.controller.enqueue(bytes);
  }

  end(error?: unknown): void {
    if (this.done) return;
    this.done = true;
    if (error === undefined) this.controller.close();
    else this.controller.error(error);
  }
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // rejected only for a caller of wait(); never unhandled
  return { promise, resolve, reject };
}

/** Where an attachment's messages and close go. */
interface Sink {
  message(data: Buffer, isBinary: boolean): void;
  close(code: number, reason: string): void;
}

/**
 * Opens the attach WebSocket. Messages can arrive with the upgrade's answer,
 * before the caller has its handlers: they wait in order until `connect`.
 */
function openAttach(url: string, token: string | undefined): Promise<{ ws: WebSocket; connect(sink: Sink): void }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: authHeaders(token), maxPayload: MAX_MESSAGE_BYTES, handshakeTimeout: CONNECT_TIMEOUT_MS });
    const what = 'GET (WebSocket) attach';
    let sink: Sink | undefined;
    const early: Array<(s: Sink) => void> = [];
    ws.on('message', (data, isBinary) => {
      const buf = data as Buffer;
      if (sink) sink.message(buf, isBinary);
      else early.push((s) => s.message(buf, isBinary));
    });
    ws.on('close', (code, why) => {
      const reason = why.toString();
      if (sink) sink.close(code, reason);
      else early.push((s) => s.close(code, reason));
    });
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let reason = res.statusMessage || String(res.statusCode);
        let message = `The attach upgrade was refused with ${res.statusCode}`;
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { reason?: string; message?: string };
          reason = body.reason || reason;
          message = body.message || message;
        } catch {
          // not JSON
        }
        reject(new SandgateError(res.statusCode ?? 0, reason, message, what));
        ws.terminate();
      });
    });
    ws.on('error', (e) => reject(new SandgateError(0, 'websocket_error', `WebSocket: ${e.message}`, what, { cause: e })));
    ws.once('open', () =>
      resolve({
        ws,
        connect: (s) => {
          sink = s;
          for (const replay of early.splice(0)) replay(s);
        },
      })
    );
  });
}

export class SandgateProcess {
  /** The pid inside the sandbox. */
  readonly pid: number;
  /** The gateway's id of the process (its URLs use it). */
  readonly id: string;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  /** Present (as an own property) only when spawned with `stdin: true`; closing it ends the process's stdin. */
  declare readonly stdin?: WritableStream<Uint8Array>;

  private readonly out: Output;
  private readonly err: Output;
  private readonly exit = deferred<{ exitCode: number }>();
  private exited = false;
  private killing: Promise<void> | undefined;

  /** Starts the process and attaches to it; a process whose attachment fails is deleted. */
  static async start(api: SandboxApi, body: ProcessRequest, abortSignal?: AbortSignal): Promise<SandgateProcess> {
    abortSignal?.throwIfAborted();
    const model = await api.startProcess(body, abortSignal);
    let attachment: Awaited<ReturnType<typeof openAttach>>;
    try {
      attachment = await openAttach(api.attachUrl(model.id), api.token);
    } catch (e) {
      await api.deleteProcess(model.id).catch(() => {});
      throw e;
    }
    const p = new SandgateProcess(api, model, attachment.ws, !!body.stdin, abortSignal);
    attachment.connect({ message: (d, b) => p.onMessage(d, b), close: (c, r) => p.onClose(c, r) });
    return p;
  }

  private constructor(
    private readonly api: SandboxApi,
    model: ProcessModel,
    private readonly ws: WebSocket,
    withStdin: boolean,
    abortSignal: AbortSignal | undefined
  ) {
    this.pid = model.pid;
    this.id = model.id;
    const flow = () => this.flow();
    this.out = new Output(flow);
    this.err = new Output(flow);
    this.stdout = this.out.stream;
    this.stderr = this.err.stream;
    if (withStdin) {
      this.stdin = new WritableStream<Uint8Array>({
        write: (chunk) => this.sendStdin(chunk),
        close: () => this.closeStdin(),
        abort: () => this.closeStdin(),
      });
    }
    if (abortSignal) {
      const onAbort = () => {
        this.exit.reject(abortSignal.reason);
        void this.kill().catch(() => {});
      };
      if (abortSignal.aborted) onAbort();
      else abortSignal.addEventListener('abort', onAbort, { once: true });
      void this.exit.promise.finally(() => abortSignal.removeEventListener('abort', onAbort)).catch(() => {});
    }
  }

  /** Resolves with the exit code once the process ended (128 + n for signal n). */
  wait(): Promise<{ exitCode: number }> {
    return this.exit.promise;
  }

  /** Kills the process and what it started (SIGKILL to its group). Idempotent. */
  kill(): Promise<void> {
    if (this.exited) return Promise.resolve();
    this.killing ??= this.api.signalProcess(this.id, 'KILL').catch((e) => {
      // 404/409: it has ended (or is being reaped) already.
      if (e instanceof SandgateError && (e.status === 404 || e.status === 409)) return;
      this.killing = undefined;
      throw e;
    });
    return this.killing;
  }

  private flow(): void {
    const full = this.out.full || this.err.full;
    if (full && !this.ws.isPaused) this.ws.pause();
    else if (!full && this.ws.isPaused) this.ws.resume();
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      const target = data[0] === 1 ? this.out : data[0] === 2 ? this.err : undefined;
      target?.push(new Uint8Array(data.subarray(1)));
      this.flow();
      return;
    }
    let msg: { type?: string; exit_code?: number | null; signal?: number | null };
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      return;
    }
    if (msg.type === 'exit') this.finish(exitCodeOf(msg.exit_code ?? null, msg.signal ?? null));
  }

  private finish(exitCode: number): void {
    this.exited = true;
    this.out.end();
    this.err.end();
    this.exit.resolve({ exitCode });
  }

  /** The socket closed: after the exit message that is the end; before it, the attachment was lost. */
  private onClose(code: number, reason: string): void {
    if (this.exited) return;
    const lost = new SandgateError(0, 'attach_closed', `The process's attach WebSocket closed before it ended (${code} ${reason})`.trim());
    this.out.end(lost);
    this.err.end(lost);
    // The process runs on in the sandbox: its exit still comes from the REST wait.
    void (async () => {
      for (;;) {
        const p = await this.api.waitProcess(this.id, WAIT_POLL_S);
        if (p.status !== 'running') return exitCodeOf(p.exit_code, p.signal);
      }
    })().then(
      (exitCode) => {
        this.exited = true;
        this.exit.resolve({ exitCode });
      },
      (e) => this.exit.reject(e)
    );
  }

  private async sendStdin(chunk: Uint8Array): Promise<void> {
    if (!(chunk instanceof Uint8Array)) throw new TypeError('stdin takes Uint8Array chunks');
    for (let at = 0; at < chunk.byteLength; at += MAX_STDIN_MESSAGE_BYTES - 1) {
      const piece = chunk.subarray(at, at + MAX_STDIN_MESSAGE_BYTES - 1);
      const frame = new Uint8Array(piece.byteLength + 1); // 0, then the bytes
      frame.set(piece, 1);
      await this.send(frame);
    }
  }

  private async closeStdin(): Promise<void> {
    // A process that has ended has no stdin left to close.
    if (this.ws.readyState !== WebSocket.OPEN) return;
    await this.send(JSON.stringify({ type: 'close_stdin' }));
  }

  private send(data: Uint8Array | string): Promise<void> {
    if (this.ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new SandgateError(0, 'stdin_closed', 'The process has ended: its stdin is closed'));
    }
    // Resolves once the bytes are with the operating system: a writer waits for a slow reader.
    return new Promise((resolve, reject) => this.ws.send(data, { binary: typeof data !== 'string' }, (e) => (e ? reject(e) : resolve())));
  }
}
