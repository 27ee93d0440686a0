// What the @jupyterlab/services tests share: the connection to the gateway
// that run_with_gateway.py started, bounded waits, and running a cell.
import assert from 'node:assert/strict';
import services from '@jupyterlab/services';
import WebSocket from 'ws';

export const baseUrl = process.env.SANDGATE_URL;
export const token = process.env.SANDGATE_TOKEN;
const wsUrl = process.env.SANDGATE_WS_URL;
assert.ok(baseUrl && wsUrl && token, 'run me through run_with_gateway.py');

export const settings = services.ServerConnection.makeSettings({ baseUrl, wsUrl, token, WebSocket });

export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Runs code; returns the reply and the iopub messages of the request.
// stop_on_error is off: after an error ipykernel aborts whatever reaches it
// before its abort window closes, which would race the next cell.
export async function execute(kernel, code, ms = 60000) {
  const iopub = [];
  const future = kernel.requestExecute({ code, stop_on_error: false });
  future.onIOPub = (msg) => iopub.push(msg);
  const reply = await withTimeout(future.done, ms, `the reply to ${JSON.stringify(code)}`);
  return { reply, iopub };
}

export const ofType = (iopub, type) => iopub.filter((m) => m.header.msg_type === type);
export const streamText = (iopub) => ofType(iopub, 'stream').map((m) => m.content.text).join('');
export const resultText = (iopub) => {
  const r = ofType(iopub, 'execute_result')[0];
  return r ? r.content.data['text/plain'] : undefined;
};
