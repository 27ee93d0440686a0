// A WebSocket to the gateway, over `ws` in Node (the token travels in the
// Authorization header, and a refused upgrade's JSON error is read) or over
// the runtime's global WebSocket elsewhere (browsers and edge runtimes cannot
// send headers on a WebSocket, so the token goes in `?token=`).
import { SandgateError } from './errors.js';
import { authHeaders } from './http.js';

/** `auto`: `ws` when it loads (Node), else the global WebSocket. */
export type WebSocketImpl = 'auto' | 'ws' | 'global';

export interface Socket {
  send(text: string): void;
  close(): void;
  /** Text frames as strings, binary frames as bytes. */
  onMessage: (data: string | Uint8Array) => void;
  onClose: (code: number, reason: string) => void;
}

/** Largest message accepted from the gateway (a PNG display arrives whole). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

type WsModule = typeof import('ws');
let wsModule: Promise<WsModule | null> | undefined;

function loadWs(): Promise<WsModule | null> {
  wsModule ??= import('ws').then(
    (m) => ((m as unknown as { default?: WsModule }).default ?? m) as WsModule,
    () => null
  );
  return wsModule;
}

/** Opens a WebSocket; rejects with a SandgateError when it cannot be opened within `timeoutMs`. */
export async function openSocket(url: string, token: string | undefined, impl: WebSocketImpl, timeoutMs: number): Promise<Socket> {
  const ws = impl === 'global' ? null : await loadWs();
  if (ws) return openWs(ws, url, token, timeoutMs);
  if (impl === 'ws') throw new SandgateError(0, 'websocket_unavailable', 'The ws package could not be loaded');
  if (typeof globalThis.WebSocket !== 'function') {
    throw new SandgateError(0, 'websocket_unavailable', 'No WebSocket: install ws, or run where a global WebSocket exists');
  }
  return openGlobal(url, token, timeoutMs);
}

function makeSocket(send: (t: string) => void, close: () => void): Socket {
  return { send, close, onMessage: () => {}, onClose: () => {} };
}

function openWs(mod: WsModule, url: string, token: string | undefined, timeoutMs: number): Promise<Socket> {
  const WS = mod.WebSocket ?? (mod as unknown as typeof mod.WebSocket);
  return new Promise((resolve, reject) => {
    const sock = new WS(url, { headers: authHeaders(token), maxPayload: MAX_MESSAGE_BYTES, handshakeTimeout: timeoutMs });
    const s = makeSocket(
      (t) => sock.send(t),
      () => sock.close()
    );
    let settled = false;
    const fail = (e: SandgateError) => {
      if (settled) return;
      settled = true;
      reject(e);
    };
    sock.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let reason = res.statusMessage || String(res.statusCode);
        let message = text || `WebSocket upgrade refused with ${res.statusCode}`;
        try {
          const body = JSON.parse(text) as { reason?: string; message?: string };
          reason = body.reason || reason;
          message = body.message || message;
        } catch {
          // not JSON
        }
        fail(new SandgateError(res.statusCode ?? 0, reason, message, 'GET (WebSocket) channels'));
        sock.terminate();
      });
    });
    sock.on('error', (e) => fail(new SandgateError(0, 'websocket_error', `WebSocket: ${e.message}`, 'GET (WebSocket) channels', { cause: e })));
    sock.on('open', () => {
      settled = true;
      resolve(s);
    });
    sock.on('message', (data, isBinary) => {
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      s.onMessage(isBinary ? new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength) : buf.toString('utf8'));
    });
    sock.on('close', (code, reason) => {
      fail(new SandgateError(0, 'websocket_closed', `WebSocket closed before it opened (${code})`));
      s.onClose(code, reason.toString());
    });
  });
}

function openGlobal(url: string, token: string | undefined, timeoutMs: number): Promise<Socket> {
  const u = new URL(url);
  if (token) u.searchParams.set('token', token);
  return new Promise((resolve, reject) => {
    const sock = new globalThis.WebSocket(u.toString());
    sock.binaryType = 'arraybuffer';
    const s = makeSocket(
      (t) => sock.send(t),
      () => sock.close()
    );
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      sock.close();
      reject(new SandgateError(0, 'client_timeout', `WebSocket not open within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.onopen = () => {
      settled = true;
      clearTimeout(timer);
      resolve(s);
    };
    sock.onerror = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new SandgateError(0, 'websocket_error', 'WebSocket failed to open', 'GET (WebSocket) channels'));
    };
    sock.onmessage = (ev: MessageEvent) => {
      s.onMessage(typeof ev.data === 'string' ? ev.data : new Uint8Array(ev.data as ArrayBuffer));
    };
    sock.onclose = (ev: { code: number; reason: string }) => s.onClose(ev.code, ev.reason);
  });
}
