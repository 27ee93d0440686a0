// @ts-check
// createSandgateSandbox as the harness's sandbox provider, against a real
// sandgate with real sandboxes and its egress proxy: sessions made and
// resumed by session id (from a new provider, as after an app restart),
// onFirstCreate, a refused token, setNetworkPolicy within and above the
// operator's ceiling, port endpoints reaching a server started with spawn,
// stop and destroy. Run by run_with_egress_gateway.py (a ceiling of *.test on
// port SANDGATE_TEST_HTTP_PORT of 127.0.0.1, where it serves "hello from HOST:PORT /"). By hand:
//   python3 run_with_egress_gateway.py --sandboxed -- node --test $PWD/sandbox_harness.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSandgateSandbox, SESSION_ID_METADATA, IDENTITY_METADATA } from '../../share/ai-sdk/dist/sandbox/index.js';
import { NetworkRefusedError } from '../../share/ai-sdk/dist/index.js';
import { api, url, token, importDependency, newSessionId, waitFor } from './support.mjs';

const { HarnessSandboxAuthenticationError } = await importDependency('@ai-sdk/harness');
const port = Number(process.env.SANDGATE_TEST_HTTP_PORT);
assert.ok(port > 0, 'run me through tests/ai-sdk/run_with_egress_gateway.py');
const curl = `curl -sS --max-time 20 http://files.test:${port}/`;
const gatewayUrl = String(url);

/** @type {Array<{ destroy(): PromiseLike<void> }>} */
const made = [];
test.after(async () => {
  for (const s of made) await s.destroy();
});

/** A provider as an application makes one. @param {Partial<import('../../share/ai-sdk/dist/sandbox/index.js').SandgateSandboxOptions>} [extra] */
function providerOf(extra = {}) {
  /** @type {import('@ai-sdk/harness').HarnessV1SandboxProvider} */
  const typed = createSandgateSandbox({ url: gatewayUrl, token, ttlS: 600, ...extra });
  assert.equal(typed.specificationVersion, 'harness-sandbox-v1');
  assert.equal(typed.providerId, 'sandgate');
  return createSandgateSandbox({ url: gatewayUrl, token, ttlS: 600, ...extra });
}

test('createSession keeps the session id and identity; onFirstCreate runs once; a new provider resumes it; stop and destroy end it', { timeout: 60000 }, async () => {
  const sessionId = newSessionId('harness');
  /** @type {string[]} */
  const setups = [];
  const created = await providerOf({ metadata: { app: 'tests' } }).createSession({
    sessionId,
    identity: 'recipe-1',
    onFirstCreate: async (s) => {
      setups.push(s.description);
      await s.writeTextFile({ path: '.setup/marker', content: 'ready' });
    },
  });
  made.push(created);
  assert.equal(setups.length, 1);
  /** @type {import('@ai-sdk/harness').HarnessV1NetworkSandboxSession} */
  const typed = created;
  assert.equal(typed.defaultWorkingDirectory, '/workspace');
  const info = (await api('GET', `api/sandboxes/${created.id}`)).body;
  assert.deepEqual(info.metadata, { app: 'tests', [SESSION_ID_METADATA]: sessionId, [IDENTITY_METADATA]: 'recipe-1' });

  // A process started before the restart keeps running; the resumed session reads its files.
  const server = await created.spawn({ command: 'exec sleep 300' });
  const restarted = providerOf();
  const resumed = await restarted.resumeSession({ sessionId });
  assert.equal(resumed.id, created.id);
  assert.equal(setups.length, 1, 'onFirstCreate does not run on resume');
  assert.equal(await resumed.readTextFile({ path: '.setup/marker' }), 'ready');
  const running = (await api('GET', `api/sandboxes/${created.id}/processes`)).body;
  assert.ok(running.some((/** @type {{pid: number, status: string}} */ p) => p.pid === server.pid && p.status === 'running'));

  // Stop ends the sandbox (Sandgate has no pause); both are idempotent, from either object.
  await resumed.stop();
  await resumed.stop();
  await created.destroy();
  assert.equal((await api('GET', `api/sandboxes/${created.id}`)).body.reason, 'deleted');
  assert.deepEqual(await server.wait(), { exitCode: 137 });
  await assert.rejects(Promise.resolve(restarted.resumeSession({ sessionId })), { status: 404, message: /No sandbox of session/ });
});

test('a sandbox whose onFirstCreate fails is deleted; a refused token is HarnessSandboxAuthenticationError', { timeout: 60000 }, async () => {
  const sessionId = newSessionId('harness-setup');
  const failure = new Error('setup failed');
  await assert.rejects(
    Promise.resolve(providerOf().createSession({ sessionId, onFirstCreate: async () => Promise.reject(failure) })),
    (e) => e === failure
  );
  const left = (await api('GET', `api/sandboxes?metadata.${SESSION_ID_METADATA}=${encodeURIComponent(sessionId)}`)).body;
  assert.deepEqual(left, []);

  const wrong = createSandgateSandbox({ url: gatewayUrl, token: 'not-the-token' });
  for (const attempt of [() => wrong.createSession({ sessionId }), () => wrong.resumeSession({ sessionId })]) {
    await assert.rejects(Promise.resolve(attempt()), (/** @type {any} */ e) => {
      assert.ok(HarnessSandboxAuthenticationError.isInstance(e), String(e));
      assert.equal(e.sandboxProviderId, 'sandgate');
      assert.match(e.message, /Invalid token/);
      return true;
    });
  }
});

test('setNetworkPolicy: custom within the ceiling opens a host, above it rejects with the gateway’s reason, deny-all closes', { timeout: 60000 }, async () => {
  const session = await providerOf({ networkOptions: { ports: [port] } }).createSession({ sessionId: newSessionId('harness-net') });
  made.push(session);
  assert.match(session.description, /Network: none/);
  assert.notEqual((await session.run({ command: curl })).exitCode, 0);

  await session.setNetworkPolicy({ mode: 'custom', allowedHosts: ['files.test'], allowedCIDRs: ['127.0.0.1/32'], deniedCIDRs: ['169.254.169.254/32'] });
  assert.equal((await session.run({ command: curl })).stdout, `hello from files.test:${port} /`);
  assert.match(session.description, new RegExp(`reach only files\\.test, 127\\.0\\.0\\.1/32 on port ${port}`));

  // Above the operator's ceiling: the gateway's reason, and the policy in force stays.
  await assert.rejects(Promise.resolve(session.setNetworkPolicy({ mode: 'custom', allowedHosts: ['files.test', 'outside.example'] })), (e) => {
    assert.ok(e instanceof NetworkRefusedError, String(e));
    assert.equal(e.status, 403);
    assert.equal(e.reason, 'network_refused');
    assert.match(e.message, /host outside\.example is outside this gateway's network ceiling/);
    return true;
  });
  await assert.rejects(Promise.resolve(session.setNetworkPolicy({ mode: 'allow-all' })), (e) => e instanceof NetworkRefusedError && e.what === 'mode' && e.value === 'open');
  // A deny-list Sandgate cannot keep is refused before anything changes.
  await assert.rejects(Promise.resolve(session.setNetworkPolicy({ mode: 'custom', allowedHosts: ['files.test'], deniedCIDRs: ['8.8.8.0/24'] })), {
    status: 400,
    message: /8\.8\.8\.0\/24 is a public range/,
  });
  const now = (await api('GET', `api/sandboxes/${session.id}`)).body.network;
  assert.deepEqual(now.hosts, ['files.test']);
  assert.equal((await session.run({ command: curl })).stdout, `hello from files.test:${port} /`);

  await session.setNetworkPolicy({ mode: 'deny-all' });
  assert.equal((await api('GET', `api/sandboxes/${session.id}`)).body.network, 'none');
  assert.match(session.description, /Network: none/);
  // The proxy stays, and refuses every request.
  const denied = await session.run({ command: curl });
  assert.doesNotMatch(denied.stdout, /hello from/);
  assert.match(denied.stdout, /sandgate-egress: refused files\.test/);
});

test('getPortEndpoint reaches python3 -m http.server started with spawn; ports lists it', { timeout: 60000 }, async () => {
  const session = await providerOf({ ports: [3000] }).createSession({ sessionId: newSessionId('harness-ports') });
  made.push(session);
  assert.deepEqual(session.ports, [3000]);
  await session.writeTextFile({ path: 'site/index.html', content: '<h1>hello from the sandbox</h1>' });
  const server = await session.spawn({ command: 'exec python3 -m http.server 8000 --bind 127.0.0.1', workingDirectory: 'site' });
  void server.stderr.cancel(); // its request log is not read here
  await waitFor('the server to listen', 20000, async () => (await session.refreshPorts()).includes(8000));
  assert.deepEqual(session.ports, [3000, 8000]);
  assert.match(session.description, /ports in use: 3000, 8000/);

  const endpoint = await session.getPortEndpoint({ port: 8000 });
  const page = await fetch(endpoint.url);
  assert.equal(page.status, 200);
  assert.equal(await page.text(), '<h1>hello from the sandbox</h1>');
  // Any path of the port, with the endpoint's headers (its signed token as a cookie).
  const other = await fetch(new URL('index.html', endpoint.url), { headers: endpoint.headers });
  assert.equal(other.status, 200);
  assert.equal((await fetch(new URL('index.html', endpoint.url))).status, 401);

  const ws = await session.getPortEndpoint({ port: 8000, protocol: 'ws' });
  assert.equal(new URL(ws.url).protocol, 'ws:');
  assert.equal(new URL(ws.url).pathname, `/api/sandboxes/${session.id}/ports/8000/`);
  assert.match(await session.getPortUrl({ port: 8000 }), /sandgate_port_token=/);
  await assert.rejects(Promise.resolve(session.getPortEndpoint({ port: 0 })), { status: 400 });

  await session.setPorts([8000]);
  assert.deepEqual(session.ports, [8000]);
  await server.kill();
  assert.deepEqual(await server.wait(), { exitCode: 137 });
  const gone = await fetch(endpoint.url);
  assert.equal(gone.status, 502);
});
