// The sandbox's network through the package, against a real sandgate with
// real sandboxes and its egress proxy: `network` on the sandbox, setNetwork,
// their typed errors, and what the model reads when a host is not allowed.
// Run by run_with_egress_gateway.py: the operator's ceiling allows *.test on
// port SANDGATE_TEST_HTTP_PORT of 127.0.0.1, where that script serves
// "hello from HOST:PORT /"; files.test and blocked.test resolve to it for the proxy.
// By hand: python3 run_with_egress_gateway.py --sandboxed -- node --test $PWD/network.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ai, sdk, url, token, kernelName, newSessionId, scriptedModel, callTool, answer, lastToolOutputs, toolResults, waitFor } from './support.mjs';

const { generateText, stepCountIs } = ai;
const { createSandgateTools, Sandgate, InMemorySessionStore, SandgateError, NetworkRefusedError, InvalidNetworkError } = sdk;

const port = Number(process.env.SANDGATE_TEST_HTTP_PORT);
assert.ok(port > 0, 'run me through tests/ai-sdk/run_with_egress_gateway.py');
const FILES = { mode: 'allow', hosts: ['files.test'], cidrs: ['127.0.0.1/32'], ports: [port] };
const BOTH = { ...FILES, hosts: ['files.test', 'blocked.test'] };
const curl = (host) => `curl -sS --max-time 20 http://${host}:${port}/`;

const store = new InMemorySessionStore();
const opened = [];
function conversation(sandbox) {
  const sandgate = new Sandgate({ url, token, store, kernelName, sandbox: { ttl_s: 600, ...sandbox } });
  const sessionId = newSessionId('net');
  opened.push([sandgate, sessionId]);
  return { sandgate, sessionId, tools: createSandgateTools({ sandgate, sessionId }) };
}

test.after(async () => {
  for (const [sandgate, id] of opened) await sandgate.endSession(id);
});

async function run(tools, toolName, input) {
  const model = scriptedModel([callTool(toolName, input), answer('done')]);
  const result = await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(4) });
  return toolResults(result)[0].output;
}

test("network 'none' is in the sandbox info; setNetwork above the ceiling or malformed is a typed error and changes nothing", { timeout: 120000 }, async () => {
  const { sandgate, sessionId, tools } = conversation({ network: 'none' });
  const shell = await run(tools, 'runShell', { command: `${curl('127.0.0.1')}; echo "exit $?"` });
  assert.doesNotMatch(shell.stdout, /hello from/);
  assert.match(shell.stdout, /exit [1-9]/);
  const before = await sandgate.getSandbox(sessionId);
  assert.equal(before.network, 'none');

  await assert.rejects(sandgate.setNetwork(sessionId, { mode: 'allow', hosts: ['files.test', 'outside.example'], ports: [port] }), (e) => {
    assert.ok(e instanceof NetworkRefusedError, String(e));
    assert.ok(e instanceof SandgateError);
    assert.equal(e.status, 403);
    assert.equal(e.reason, 'network_refused');
    assert.equal(e.what, 'host');
    assert.equal(e.host, 'outside.example');
    assert.match(e.message, /host outside\.example is outside this gateway's network ceiling/);
    return true;
  });
  await assert.rejects(sandgate.setNetwork(sessionId, { mode: 'allow', hosts: ['files.test'], ports: [0] }), (e) => {
    assert.ok(e instanceof InvalidNetworkError, String(e));
    assert.equal(e.status, 400);
    assert.match(e.message, /ports/);
    return true;
  });
  await assert.rejects(sandgate.setNetwork(sessionId, 'open'), (e) => e instanceof NetworkRefusedError && e.what === 'mode' && e.value === 'open');
  const after = await sandgate.getSandbox(sessionId);
  assert.equal(after.id, before.id);
  assert.equal(after.network, 'none');
  assert.equal((await store.get(sessionId)).network, undefined);

  // The create call types its refusal the same way.
  await assert.rejects(sandgate.client.createSandbox({ network: { mode: 'allow', hosts: ['outside.example'] } }), (e) => e instanceof NetworkRefusedError && e.host === 'outside.example');
});

test('the model reads the proxy refusal of a host outside the allow-list, with a note; setNetwork then lets it through', { timeout: 180000 }, async () => {
  const { sandgate, sessionId, tools } = conversation({ network: FILES });
  assert.match(tools.runShell.description, /403/);
  assert.match(tools.runCode.description, /do not retry it and do not try other hosts/);
  let seen;
  const model = scriptedModel([
    callTool('runShell', { command: curl('files.test') }),
    callTool('runShell', { command: curl('blocked.test') }),
    (prompt) => {
      [seen] = lastToolOutputs(prompt);
      return answer('blocked.test is not allowed; please allow it');
    },
  ]);
  const result = await generateText({ model, tools, prompt: 'fetch both', stopWhen: stepCountIs(5) });
  const [allowed, refused] = toolResults(result).map((r) => r.output);
  assert.equal(allowed.stdout, `hello from files.test:${port} /`);
  assert.equal(allowed.note, undefined);
  assert.match(refused.stdout, new RegExp(`sandgate-egress: refused blocked\\.test:${port}: host blocked\\.test is not in the sandbox's allowed hosts`));
  assert.match(refused.note, new RegExp(`network policy refused blocked\\.test:${port} \\(host blocked\\.test is not in the sandbox's allowed hosts\\)`));
  assert.match(refused.note, /Do not retry it/);
  assert.deepEqual(seen.value, refused, 'the model reads the refusal and the note');

  const info = await sandgate.getSandbox(sessionId);
  assert.equal(info.network.mode, 'allow');
  assert.deepEqual(info.network.hosts, ['files.test']);

  const changed = await sandgate.setNetwork(sessionId, BOTH);
  assert.equal(changed.note, undefined);
  assert.equal(changed.value.id, info.id);
  assert.deepEqual([...changed.value.network.hosts].sort(), ['blocked.test', 'files.test']);
  assert.deepEqual([...(await sandgate.getSandbox(sessionId)).network.hosts].sort(), ['blocked.test', 'files.test']);
  // New connections follow it at once, from a kernel too (Python's urllib uses the proxy by itself).
  const py = await run(tools, 'runCode', { code: `import urllib.request\nurllib.request.urlopen('http://blocked.test:${port}/', timeout=20).read().decode()` });
  assert.equal(py.error, null, JSON.stringify(py.error));
  assert.equal(py.result, `'hello from blocked.test:${port} /'`);

  // Narrowed again: the kernel's request is refused with a 403 the model can read.
  await sandgate.setNetwork(sessionId, FILES);
  const denied = await run(tools, 'runCode', { code: `import urllib.request\nurllib.request.urlopen('http://blocked.test:${port}/', timeout=20)` });
  assert.equal(denied.error?.name, 'HTTPError');
  assert.match(denied.error.value, /403/);
});

test('setNetwork on a conversation without a sandbox creates it with that network, which a replacement sandbox keeps', { timeout: 180000 }, async () => {
  const { sandgate, sessionId, tools } = conversation({});
  const made = await sandgate.setNetwork(sessionId, FILES);
  assert.equal(made.value.network.mode, 'allow');
  const rec = await store.get(sessionId);
  assert.equal(rec.sandboxId, made.value.id);
  assert.deepEqual(rec.network, FILES);
  assert.equal((await run(tools, 'runShell', { command: curl('files.test') })).stdout, `hello from files.test:${port} /`);

  // The sandbox expires; the next call's new sandbox has the conversation's network, not the default.
  await sandgate.client.setSandboxTtl(made.value.id, 1);
  await waitFor('the sandbox to expire', 20000, () => sandgate.client.getSandbox(made.value.id).then(() => false, (e) => e.reason === 'expired'));
  const again = await run(tools, 'runShell', { command: curl('files.test') });
  assert.match(again.note, /had expired; a new one was created/);
  assert.equal(again.stdout, `hello from files.test:${port} /`);
  const now = await sandgate.getSandbox(sessionId);
  assert.notEqual(now.id, made.value.id);
  assert.deepEqual(now.network.hosts, ['files.test']);
});
