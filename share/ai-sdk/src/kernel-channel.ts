// One connection to /api/kernels/{id}/channels in the legacy JSON protocol of
// jupyter_server: messages as JSON text frames, or as binary frames
// (a count, offsets, the JSON, then buffers) when they carry buffers.
import { SandgateError } from './errors.js';
import { openSocket, type Socket, type WebSocketImpl } from './websocket.js';

export interface JupyterMessage {
  channel: string;
  header: { msg_id: string; msg_type: string; [k: string]: unknown };
  parent_header: { msg_id?: string; [k: string]: unknown };
  metadata: Record<string, unknown>;
  content: Record<string, unknown>;
  buffers?: unknown[];
}

/** Decodes jupyter_server's binary message: nbufs, offsets (uint32 BE), then the JSON and the buffers. */
export function decodeBinaryMessage(bytes: Uint8Array): JupyterMessage {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 8) throw new Error('binary message shorter than its header');
  const nbufs = view.getUint32(0);
  if (nbufs < 1 || 4 * (nbufs + 1) > bytes.byteLength) throw new Error(`binary message with ${nbufs} buffers`);
  const offsets: number[] = [];
  for (let i = 0; i < nbufs; i++) offsets.push(view.getUint32(4 * (i + 1)));
  offsets.push(bytes.byteLength);
  if (offsets[0] !== 4 * (nbufs + 1)) throw new Error('binary message: bad first offset');
  for (let i = 0; i < nbufs; i++) if (offsets[i]! > offsets[i + 1]!) throw new Error('binary message: offsets out of order');
  const json = new TextDecoder().decode(bytes.subarray(offsets[0], offsets[1]));
  const msg = JSON.parse(json) as JupyterMessage;
  msg.buffers = [];
  for (let i = 1; i < nbufs; i++) msg.buffers.push(bytes.subarray(offsets[i], offsets[i + 1]));
  return msg;
}

function newId(): string {
  return globalThis.crypto.randomUUID().replace(/-/g, '');
}

type Listener = (msg: JupyterMessage) => void;

/** A client of one kernel's channels; every message is routed by its parent msg_id. */
export class KernelChannel {
  private readonly listeners = new Map<string, Listener>();
  private closeListeners = new Set<(why: SandgateError) => void>();
  private closed_: SandgateError | null = null;
  private constructor(
    private readonly socket: Socket,
    readonly session: string
  ) {
    socket.onMessage = (data) => this.dispatch(data);
    socket.onClose = (code, reason) => {
      const why = new SandgateError(0, 'websocket_closed', `The kernel's WebSocket closed (${code}${reason ? ' ' + reason : ''})`);
      this.closed_ = why;
      for (const l of this.closeListeners) l(why);
      this.closeListeners.clear();
    };
  }

  static async open(wsBase: string, kernelId: string, token: string | undefined, impl: WebSocketImpl, timeoutMs: number): Promise<KernelChannel> {
    const session = newId();
    const url = `${wsBase}api/kernels/${encodeURIComponent(kernelId)}/channels?session_id=${session}`;
    return new KernelChannel(await openSocket(url, token, impl, timeoutMs), session);
  }

  get closed(): SandgateError | null {
    return this.closed_;
  }

  close(): void {
    this.socket.close();
  }

  /** Calls `l` when the socket closes (at once if it has). Returns an unsubscribe function. */
  onClose(l: (why: SandgateError) => void): () => void {
    if (this.closed_) {
      l(this.closed_);
      return () => {};
    }
    this.closeListeners.add(l);
    return () => this.closeListeners.delete(l);
  }

  /** Routes the replies and iopub messages whose parent is `msgId` to `l`. */
  listen(msgId: string, l: Listener): () => void {
    this.listeners.set(msgId, l);
    return () => this.listeners.delete(msgId);
  }

  /** Sends a request; returns its msg_id. */
  send(channel: 'shell' | 'control' | 'stdin', msgType: string, content: Record<string, unknown>, msgId = newId()): string {
    const header = { msg_id: msgId, msg_type: msgType, username: 'sandgate-ai-sdk', session: this.session, date: new Date().toISOString(), version: '5.3' };
    this.socket.send(JSON.stringify({ channel, header, parent_header: {}, metadata: {}, content, buffers: [] }));
    return msgId;
  }

  private dispatch(data: string | Uint8Array): void {
    let msg: JupyterMessage;
    try {
      msg = typeof data === 'string' ? (JSON.parse(data) as JupyterMessage) : decodeBinaryMessage(data);
    } catch {
      return; // a frame this client cannot read is not one of its replies
    }
    const parent = msg.parent_header?.msg_id;
    if (parent) this.listeners.get(parent)?.(msg);
  }
}
