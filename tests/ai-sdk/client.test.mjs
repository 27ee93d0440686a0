// SandgateClient over the Kernel Gateway API and the channels WebSocket,
// against a real sandgate and kernel: streaming callbacks, results, errors,
// timeouts enforced by an interrupt, and typed gateway errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sdk, url, token, kernelName } from './support.mjs';

const { SandgateClient, SandgateError } = sdk;

const client = new SandgateClient({ url, token, executeTransport: 'websocket' });
let kernelId;

before(async () => {
  const k = await client.startKernel(kernelName ? { name: kernelName } : {});
  kernelId = k.id;
  assert.match(kernelId, /^[0-9a-f-]{36}$/);
});

after(async () => {
  if (kernelId) await client.deleteKernel(kernelId);
});

test('execute streams stdout and stderr chunks and returns the record', { timeout: 60000 }, async () => {
  const out = [];
  const err = [];
  const r = await client.execute(kernelId, "import sys\nprint('one', flush=True)\nprint('two', file=sys.stderr, flush=True)\n6 * 7", {
    onStdout: (t) => out.push(t),
    onStderr: (t) => err.push(t),
  });
  assert.equal(r.status, 'ok');
  assert.equal(r.stdout, 'one\n');
  assert.equal(r.stderr, 'two\n');
  assert.equal(out.join(''), 'one\n');
  assert.equal(err.join(''), 'two\n');
  assert.equal(r.result, '42');
  assert.equal(r.error, null);
  assert.equal(r.timed_out, false);
  assert.equal(typeof r.execution_count, 'number');
  assert.equal(r.outputs.length, 1);
  assert.equal(r.outputs[0].output_type, 'execute_result');
});

test('execute without callbacks works over the WebSocket too', { timeout: 60000 }, async () => {
  const r = await client.execute(kernelId, 'x = 20\nx + 1');
  assert.equal(r.result, '21');
});

test('display bundles reach onDisplay as the kernel sent them', { timeout: 60000 }, async () => {
  const shown = [];
  const r = await client.execute(kernelId, "from IPython.display import display, HTML\ndisplay(HTML('<b>bold</b>'))", {
    onDisplay: (b) => shown.push(b),
  });
  assert.equal(r.status, 'ok');
  assert.equal(shown.length, 1);
  assert.equal(shown[0].data['text/html'], '<b>bold</b>');
  assert.deepEqual(r.outputs.map((o) => o.output_type), ['display_data']);
});

test('an error reaches onError and the record', { timeout: 60000 }, async () => {
  const errors = [];
  const r = await client.execute(kernelId, "raise ValueError('bad value')", { onError: (e) => errors.push(e) });
  assert.equal(r.status, 'error');
  assert.equal(r.error.ename, 'ValueError');
  assert.equal(r.error.evalue, 'bad value');
  assert.ok(r.error.traceback.length > 0);
  assert.equal(errors.length, 1);
});

test('a timeout interrupts the kernel and keeps its state', { timeout: 60000 }, async () => {
  await client.execute(kernelId, 'before_timeout = 7');
  const started = Date.now();
  const r = await client.execute(kernelId, 'import time\ntime.sleep(60)', { timeoutS: 2 });
  assert.equal(r.status, 'timeout');
  assert.equal(r.timed_out, true);
  assert.equal(r.kernel_restarted, false);
  assert.ok(Date.now() - started < 20000);
  const after = await client.execute(kernelId, 'before_timeout * 6');
  assert.equal(after.result, '42');
});

test('interruptKernel stops running code', { timeout: 60000 }, async () => {
  let started;
  const running = new Promise((resolve) => (started = resolve));
  const done = client.execute(kernelId, "import time\nprint('go', flush=True)\ntime.sleep(60)", { onStdout: () => started() });
  await running;
  await client.interruptKernel(kernelId);
  const r = await done;
  assert.equal(r.status, 'error');
  assert.equal(r.error.ename, 'KeyboardInterrupt');
});

test('the kernel model is listed and fetched by id', { timeout: 30000 }, async () => {
  const k = await client.getKernel(kernelId);
  assert.equal(k.id, kernelId);
  const all = await client.listKernels();
  assert.ok(all.some((m) => m.id === kernelId));
});

test('gateway errors are SandgateErrors with status and reason', { timeout: 30000 }, async () => {
  const missing = '00000000-0000-4000-8000-000000000000';
  await assert.rejects(client.getKernel(missing), (e) => {
    assert.ok(e instanceof SandgateError);
    assert.equal(e.status, 404);
    assert.equal(typeof e.reason, 'string');
    assert.match(e.message, /does not exist/);
    assert.equal(e.isNotFound, true);
    return true;
  });
  // Over the WebSocket the refused upgrade's JSON error is read too.
  await assert.rejects(client.execute(missing, '1', { transport: 'websocket' }), (e) => {
    assert.ok(e instanceof SandgateError);
    assert.equal(e.status, 404);
    return true;
  });
  const wrong = new SandgateClient({ url, token: 'wrong-token' });
  await assert.rejects(wrong.listKernels(), (e) => e instanceof SandgateError && e.status === 403);
});
