// The tools in their default mode, a sandbox per conversation, against a
// real sandgate with real sandboxes (commands run only in sandboxes): runShell,
// uploads (read with pandas), readFile, and an expired sandbox recreated with
// a note. By hand:
//   python3 ../e2e/run_with_gateway.py --sandboxed -- node --test $PWD/sandbox_tools.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ai, sdk, url, token, kernelName, api, newSessionId, scriptedModel, callTool, answer, lastToolOutputs, toolResults, waitFor } from './support.mjs';

const { generateText, stepCountIs } = ai;
const { createSandgateTools, Sandgate, InMemorySessionStore } = sdk;

const store = new InMemorySessionStore();
const sandgate = new Sandgate({ url, token, store, kernelName, sandbox: { ttl_s: 600 } });
const opened = [];
const text = (bytes) => new TextDecoder().decode(bytes);

function toolsFor(sessionId) {
  opened.push(sessionId);
  return createSandgateTools({ sandgate, sessionId });
}

test.after(async () => {
  for (const id of opened) await sandgate.endSession(id);
});

async function run(tools, toolName, input) {
  const model = scriptedModel([callTool(toolName, input), answer('done')]);
  const result = await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(4) });
  return toolResults(result)[0].output;
}

// Ends the conversation's sandbox now: its TTL set to 1 s (PATCH), then past.
async function expire(sessionId) {
  const { sandboxId } = await store.get(sessionId);
  await sandgate.client.setSandboxTtl(sandboxId, 1);
  await waitFor('the sandbox to expire', 20000, async () => (await api('GET', `api/sandboxes/${sandboxId}`)).body.reason === 'expired');
  return sandboxId;
}

test('runShell returns stdout, stderr and exit codes', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('shell');
  const tools = toolsFor(sessionId);
  const ok = await run(tools, 'runShell', { command: 'echo out; echo err >&2' });
  assert.deepEqual(ok, { stdout: 'out\n', stderr: 'err\n', exitCode: 0, timedOut: false, truncated: false });
  assert.equal((await run(tools, 'runShell', { command: 'exit 7' })).exitCode, 7);
  assert.equal((await run(tools, 'runShell', { command: 'no-such-command-here' })).exitCode, 127);
  assert.equal((await run(tools, 'runShell', { command: 'pwd' })).stdout, '/workspace\n');
  const slow = await run(tools, 'runShell', { command: 'sleep 30', timeoutS: 1 });
  assert.equal(slow.timedOut, true);
  // The conversation's sandbox carries its id as metadata.
  const { sandboxId } = await store.get(sessionId);
  assert.equal((await api('GET', `api/sandboxes/${sandboxId}`)).body.metadata.conversation, sessionId);
});

test('uploadFile puts the file in the workspace; readFile reads what a command wrote', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('files');
  const tools = toolsFor(sessionId);
  const up = await sandgate.uploadFile(sessionId, 'notes/todo.txt', 'buy milk\n');
  assert.equal(up.path, '/workspace/notes/todo.txt');
  assert.equal(up.size, 9);
  assert.equal((await run(tools, 'runShell', { command: 'cat notes/todo.txt' })).stdout, 'buy milk\n');
  await run(tools, 'runShell', { command: 'echo done > /workspace/out.txt' });
  assert.equal(text(await sandgate.readFile(sessionId, '/workspace/out.txt')), 'done\n');
  assert.equal(text(await sandgate.readFile(sessionId, 'out.txt')), 'done\n');
});

test('an uploaded CSV is read with pandas', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('csv');
  const tools = toolsFor(sessionId);
  const up = await sandgate.uploadFile(sessionId, 'sales.csv', new TextEncoder().encode('region,amount\nnorth,10\nsouth,32\nnorth,5\n'));
  assert.equal(up.path, '/workspace/sales.csv');
  assert.equal(up.size, 40);
  assert.match(up.hint, /\/workspace\/sales\.csv/);
  const model = scriptedModel([
    callTool('runCode', { code: `import pandas as pd\ndf = pd.read_csv(${JSON.stringify(up.path)})\nint(df.groupby('region').amount.sum()['north'])` }),
    (prompt) => answer(`north sold ${lastToolOutputs(prompt)[0].value.result}`),
  ]);
  const result = await generateText({ model, tools, prompt: up.hint, stopWhen: stepCountIs(4) });
  assert.equal(toolResults(result)[0].output.result, '15');
  assert.match(result.text, /north sold 15/);
  // The kernel runs in the conversation's sandbox.
  const { sandboxId, kernels } = await store.get(sessionId);
  assert.equal((await api('GET', `api/kernels/${kernels.python}`)).body.sandbox_id, sandboxId);
});

test('runCode and runShell share the workspace', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('shared');
  const tools = toolsFor(sessionId);
  const py = await run(tools, 'runCode', { code: "open('/workspace/from_python.txt', 'w').write('hello')" });
  assert.equal(py.error, null);
  assert.equal((await run(tools, 'runShell', { command: 'cat /workspace/from_python.txt' })).stdout, 'hello');
  await run(tools, 'runShell', { command: 'echo 42 > /workspace/from_shell.txt' });
  assert.equal((await run(tools, 'runCode', { code: "int(open('/workspace/from_shell.txt').read())" })).result, '42');
  assert.equal(text(await sandgate.readFile(sessionId, 'from_python.txt')), 'hello');
});

test('runShell in an expired sandbox gets a new one, and the result says so', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('expired-shell');
  const tools = toolsFor(sessionId);
  await run(tools, 'runShell', { command: 'touch /workspace/old.txt' });
  const old = await expire(sessionId);
  const shell = await run(tools, 'runShell', { command: 'ls /workspace' });
  assert.equal(shell.exitCode, 0);
  assert.doesNotMatch(shell.stdout, /old\.txt/);
  assert.match(shell.note, /sandbox of this conversation had expired; a new one was created/);
  assert.notEqual((await store.get(sessionId)).sandboxId, old);
  const again = await run(tools, 'runShell', { command: 'true' });
  assert.equal(again.note, undefined);
});

test('runCode in an expired sandbox gets a new one, and the result says so', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('expired-python');
  const tools = toolsFor(sessionId);
  const first = await run(tools, 'runCode', { code: 'x = 1' });
  assert.equal(first.note, undefined);
  const old = await expire(sessionId);
  const second = await run(tools, 'runCode', { code: "'x' in globals()" });
  assert.equal(second.result, 'False');
  assert.match(second.note, /sandbox of this conversation had expired; a new one was created/);
  const now = await store.get(sessionId);
  assert.notEqual(now.sandboxId, old);
  assert.equal((await api('GET', `api/sandboxes/${now.sandboxId}`)).status, 200);
});
