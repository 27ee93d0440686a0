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

// Sends code, waits until its first output arrived (the user code runs, so
// an interrupt lands in it), interrupts the kernel; returns the reply.
export async function interruptedReply(kernel, code) {
  let started;
  const running = new Promise((resolve) => (started = resolve));
  // stop_on_error off: ipykernel would abort the next request after the interrupt.
  const future = kernel.requestExecute({ code, stop_on_error: false });
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') started();
  };
  await withTimeout(running, 30000, 'the cell to start');
  await withTimeout(kernel.interrupt(), 10000, 'interrupt');
  return withTimeout(future.done.catch((r) => r), 20000, 'the interrupted reply');
}

// A KernelManager and a started kernel of `name`, with its kernel_info.
export async function startKernel(name) {
  const manager = new services.KernelManager({ serverSettings: settings });
  await withTimeout(manager.ready, 20000, 'the kernel manager');
  const kernel = await withTimeout(manager.startNew({ name }), 90000, `a ${name} kernel`);
  const info = await withTimeout(kernel.info, 60000, 'kernel_info');
  return { manager, kernel, info };
}

// Shuts the kernel down unless a test did, and disposes of the manager.
export async function stopKernel(manager, kernel) {
  if (kernel && !kernel.isDisposed) await withTimeout(kernel.shutdown(), 30000, 'shutdown');
  if (manager) manager.dispose();
}

// Shuts the kernel down; then neither the manager nor the gateway lists it.
export async function assertShutdownRemoves(manager, kernel) {
  const id = kernel.id;
  await withTimeout(kernel.shutdown(), 30000, 'shutdown');
  await manager.refreshRunning();
  assert.ok(![...manager.running()].some((k) => k.id === id), 'kernel still listed');
  const r = await fetch(`${baseUrl}api/kernels/${id}`, { headers: { Authorization: `token ${token}` } });
  assert.equal(r.status, 404);
}

export const ofType = (iopub, type) => iopub.filter((m) => m.header.msg_type === type);
export const streamText = (iopub) => ofType(iopub, 'stream').map((m) => m.content.text).join('');
export const resultText = (iopub) => {
  const r = ofType(iopub, 'execute_result')[0];
  return r ? r.content.data['text/plain'] : undefined;
};
