// SandgateClient over the Sandgate API of docs/api.md: sandboxes with a TTL
// and metadata, kernels in a sandbox, files, commands and REST execute.
// By hand: python3 ../e2e/run_with_gateway.py --sandboxed -- node --test $PWD/sandbox_api.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sdk, url, token, kernelName, PNG_SIGNATURE, waitFor } from './support.mjs';

const { SandgateClient, SandgateError } = sdk;
const client = new SandgateClient({ url, token });
const tag = `api-test-${process.pid}`;
let sandbox;

before(async () => {
  sandbox = await client.createSandbox({ ttl_s: 600, metadata: { conversation: tag } });
});

after(async () => {
  if (sandbox) await client.deleteSandbox(sandbox.id).catch(() => {});
});

test('a sandbox is created with its ttl and metadata, fetched and listed by metadata', { timeout: 60000 }, async () => {
  assert.match(sandbox.id, /^[0-9a-f-]{36}$/);
  assert.deepEqual(sandbox.metadata, { conversation: tag });
  const ttl = (Date.parse(sandbox.expires_at) - Date.parse(sandbox.created)) / 1000;
  assert.ok(Math.abs(ttl - 600) < 5, `ttl ${ttl}`);
  assert.deepEqual(sandbox.kernels, []);
  assert.equal((await client.getSandbox(sandbox.id)).id, sandbox.id);
  const listed = await client.listSandboxes({ conversation: tag });
  assert.deepEqual(listed.map((s) => s.id), [sandbox.id]);
  assert.deepEqual(await client.listSandboxes({ conversation: tag + '-none' }), []);
});

test('PATCH sets a new expiry', { timeout: 30000 }, async () => {
  const s = await client.setSandboxTtl(sandbox.id, 1200);
  const left = (Date.parse(s.expires_at) - Date.now()) / 1000;
  assert.ok(left > 1100 && left <= 1205, `expires in ${left} s`);
});

test('files: upload, list, download, delete', { timeout: 60000 }, async () => {
  const up = await client.uploadFile(sandbox.id, 'data/in.csv', 'a,b\n1,2\n');
  assert.deepEqual(up, { path: 'data/in.csv', size: 8 });
  const bytes = Uint8Array.from([...PNG_SIGNATURE, 0, 1, 2, 255]);
  await client.uploadFile(sandbox.id, 'data/blob.bin', bytes);
  const entries = await client.listFiles(sandbox.id, 'data');
  assert.deepEqual(entries.map((e) => [e.name, e.type, e.size]).sort(), [
    ['blob.bin', 'file', 12],
    ['in.csv', 'file', 8],
  ]);
  assert.ok((await client.listFiles(sandbox.id)).some((e) => e.name === 'data' && e.type === 'directory'));
  assert.deepEqual(await client.downloadFile(sandbox.id, 'data/blob.bin'), bytes);
  assert.equal(new TextDecoder().decode(await client.downloadFile(sandbox.id, 'data/in.csv')), 'a,b\n1,2\n');
  await client.deleteFile(sandbox.id, 'data/blob.bin');
  await assert.rejects(client.downloadFile(sandbox.id, 'data/blob.bin'), (e) => e instanceof SandgateError && e.status === 404);
  // The client refuses `..` and absolute paths itself: a URL parser would resolve them into another path.
  await assert.rejects(client.downloadFile(sandbox.id, '../etc/passwd'), (e) => e instanceof SandgateError && e.status === 400);
  await assert.rejects(client.uploadFile(sandbox.id, '/etc/x', 'x'), (e) => e instanceof SandgateError && e.status === 400);
  // The gateway refuses a symlink that leads out of the workspace.
  assert.equal((await client.runCommand(sandbox.id, { cmd: 'ln -s /etc/passwd out-link' })).exit_code, 0);
  await assert.rejects(client.downloadFile(sandbox.id, 'out-link'), (e) => e instanceof SandgateError && e.status === 400);
});

test('commands: output, exit codes, cwd, stdin and timeouts', { timeout: 60000 }, async () => {
  const ok = await client.runCommand(sandbox.id, { cmd: 'echo hi; echo err >&2' });
  assert.equal(ok.stdout, 'hi\n');
  assert.equal(ok.stderr, 'err\n');
  assert.equal(ok.exit_code, 0);
  assert.equal(ok.timed_out, false);
  assert.equal((await client.runCommand(sandbox.id, { cmd: 'exit 3' })).exit_code, 3);
  assert.equal((await client.runCommand(sandbox.id, { cmd: ['/bin/cat', 'in.csv'], cwd: 'data' })).stdout, 'a,b\n1,2\n');
  assert.equal((await client.runCommand(sandbox.id, { cmd: 'wc -c', stdin: 'abcd' })).stdout.trim(), '4');
  const slow = await client.runCommand(sandbox.id, { cmd: 'sleep 30', timeout_s: 1 });
  assert.equal(slow.timed_out, true);
  assert.equal(slow.exit_code, null);
});

test('a kernel started in the sandbox shares its workspace; REST execute with a timeout keeps state', { timeout: 120000 }, async () => {
  const k = await client.startKernel({ ...(kernelName ? { name: kernelName } : {}), sandbox_id: sandbox.id });
  assert.equal(k.sandbox_id, sandbox.id);
  assert.deepEqual((await client.getSandbox(sandbox.id)).kernels.map((m) => m.id), [k.id]);
  const r = await client.execute(k.id, "open('/workspace/data/in.csv').read()", { transport: 'http' });
  assert.equal(r.status, 'ok');
  assert.equal(r.result, "'a,b\\n1,2\\n'");
  await client.execute(k.id, 'kept = 5', { transport: 'http' });
  const slow = await client.execute(k.id, 'import time\ntime.sleep(60)', { transport: 'http', timeoutS: 1 });
  assert.equal(slow.status, 'timeout');
  assert.equal(slow.timed_out, true);
  assert.equal(slow.kernel_restarted, false);
  const again = await client.execute(k.id, 'kept * 2', { transport: 'http' });
  assert.equal(again.result, '10');
  const record = await client.getExecution(k.id, again.msg_id);
  assert.equal(record.result, '10');
  // auto without callbacks takes the REST path; the record is the same shape.
  assert.equal((await client.execute(k.id, 'kept')).result, '5');
  await client.deleteKernel(k.id);
  assert.equal((await client.getSandbox(sandbox.id)).kernels.length, 0);
});

test('a deleted sandbox answers 404 deleted', { timeout: 60000 }, async () => {
  const s = await client.createSandbox({ ttl_s: 60 });
  await client.deleteSandbox(s.id);
  await assert.rejects(client.getSandbox(s.id), (e) => {
    assert.ok(e instanceof SandgateError);
    assert.equal(e.status, 404);
    assert.equal(e.reason, 'deleted');
    assert.equal(e.isGone, true);
    return true;
  });
});

test('an expired sandbox answers 404 expired', { timeout: 60000 }, async () => {
  const s = await client.createSandbox({ ttl_s: 1 });
  const gone = await waitFor('the sandbox to expire', 20000, () => client.getSandbox(s.id).then(() => null, (e) => e));
  assert.ok(gone instanceof SandgateError && gone.status === 404 && gone.reason === 'expired', String(gone));
});
