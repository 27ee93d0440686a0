// The tools in their default mode, a sandbox per conversation, against a
// real sandgate: uploads read with pandas, runShell, and an expired sandbox
// recreated with a note. NOT REGISTERED in CTest until the gateway serves
// the Sandgate API of docs/api.md; run by hand with:
//   python3 ../e2e/run_with_gateway.py -- node --test $PWD/sandbox_tools.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ai, sdk, url, token, kernelName, api, newSessionId, scriptedModel, callTool, answer, lastToolOutputs, toolResults } from './support.mjs';

const { generateText, stepCountIs } = ai;
const { createSandgateTools, Sandgate, InMemorySessionStore } = sdk;

const store = new InMemorySessionStore();
const sandgate = new Sandgate({ url, token, store, kernelName, sandbox: { ttl_s: 600 } });
const opened = [];

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

test('an uploaded CSV is read with pandas', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('csv');
  const tools = toolsFor(sessionId);
  const up = await sandgate.uploadFile(sessionId, 'sales.csv', new TextEncoder().encode('region,amount\nnorth,10\nsouth,32\nnorth,5\n'));
  assert.equal(up.path, '/workspace/sales.csv');
  assert.equal(up.size, 40);
  assert.match(up.hint, /\/workspace\/sales\.csv/);
  const model = scriptedModel([
    callTool('runPython', { code: `import pandas as pd\ndf = pd.read_csv(${JSON.stringify(up.path)})\nint(df.groupby('region').amount.sum()['north'])` }),
    (prompt) => answer(`north sold ${lastToolOutputs(prompt)[0].value.result}`),
  ]);
  const result = await generateText({ model, tools, prompt: up.hint, stopWhen: stepCountIs(4) });
  assert.equal(toolResults(result)[0].output.result, '15');
  assert.match(result.text, /north sold 15/);
  // The kernel runs in the conversation's sandbox.
  const { sandboxId, kernelId } = await store.get(sessionId);
  assert.equal((await api('GET', `api/kernels/${kernelId}`)).body.sandbox_id, sandboxId);
});

test('runShell returns stdout, stderr and exit codes, in the same workspace as runPython', { timeout: 120000 }, async () => {
  const tools = toolsFor(newSessionId('shell'));
  const ok = await run(tools, 'runShell', { command: 'echo out; echo err >&2' });
  assert.deepEqual(ok, { stdout: 'out\n', stderr: 'err\n', exitCode: 0, timedOut: false, truncated: false });
  const failed = await run(tools, 'runShell', { command: 'exit 7' });
  assert.equal(failed.exitCode, 7);
  const missing = await run(tools, 'runShell', { command: 'no-such-command-here' });
  assert.equal(missing.exitCode, 127);
  const py = await run(tools, 'runPython', { code: "open('/workspace/from_python.txt', 'w').write('hello')" });
  assert.equal(py.error, null);
  const cat = await run(tools, 'runShell', { command: 'cat /workspace/from_python.txt' });
  assert.equal(cat.stdout, 'hello');
  const slow = await run(tools, 'runShell', { command: 'sleep 30', timeoutS: 1 });
  assert.equal(slow.timedOut, true);
});

test('readFile returns what the code wrote', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('read');
  const tools = toolsFor(sessionId);
  await run(tools, 'runPython', { code: "with open('/workspace/out.txt', 'w') as f:\n    f.write('result: 42')" });
  assert.equal(new TextDecoder().decode(await sandgate.readFile(sessionId, '/workspace/out.txt')), 'result: 42');
  assert.equal(new TextDecoder().decode(await sandgate.readFile(sessionId, 'out.txt')), 'result: 42');
});

test('an expired sandbox is recreated and the tool result says so', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('expired');
  const tools = toolsFor(sessionId);
  // Ends the conversation's sandbox now: its TTL set to 1 s (PATCH), then past.
  const expire = async () => {
    const { sandboxId } = await store.get(sessionId);
    await sandgate.client.setSandboxTtl(sandboxId, 1);
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal((await api('GET', `api/sandboxes/${sandboxId}`)).body.reason, 'expired');
    return sandboxId;
  };
  const first = await run(tools, 'runPython', { code: 'x = 1' });
  assert.equal(first.note, undefined);
  const old = await expire();

  const second = await run(tools, 'runPython', { code: "'x' in globals()" });
  assert.equal(second.result, 'False');
  assert.match(second.note, /sandbox of this conversation had expired; a new one was created/);
  const now = await store.get(sessionId);
  assert.notEqual(now.sandboxId, old);
  assert.equal((await api('GET', `api/sandboxes/${now.sandboxId}`)).status, 200);

  // runShell recreates it as well.
  await expire();
  const shell = await run(tools, 'runShell', { command: 'true' });
  assert.equal(shell.exitCode, 0);
  assert.match(shell.note, /had expired/);
});
