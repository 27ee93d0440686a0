// runCode (Python, the default language) against a real sandgate and a real kernel, driven by the AI SDK's
// generateText loop with a scripted mock model. These run with `sandbox:
// false` (one kernel per conversation from POST /api/kernels), which needs
// only the Kernel Gateway API; sandbox_tools.test.mjs covers the sandbox mode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ai, aiVersion, sdk, url, token, kernelName, api, newSessionId, scriptedModel, callTool, answer, lastToolOutputs, toolResults, PNG_SIGNATURE } from './support.mjs';

const { generateText, stepCountIs } = ai;
const { createSandgateTools, Sandgate, InMemorySessionStore, InMemoryDisplayStore } = sdk;

// One store per file, shared by every tool set here, as an app would share its own.
const store = new InMemorySessionStore();
const displays = new InMemoryDisplayStore();
const sandgate = new Sandgate({ url, token, store, displays, kernelName, sandbox: false });
const opened = [];

function toolsFor(sessionId, extra = {}) {
  opened.push(sessionId);
  return createSandgateTools({ sandgate, sessionId, ...extra });
}

test.after(async () => {
  for (const id of opened) await sandgate.endSession(id);
});

// Runs a one-tool-call conversation and returns [tool output, generateText result].
async function runOnce(tools, code, extraInput = {}) {
  const model = scriptedModel([callTool('runCode', { code, ...extraInput }), answer('done')]);
  const result = await generateText({ model, tools, prompt: 'run it', stopWhen: stepCountIs(4) });
  const [r] = toolResults(result);
  assert.equal(r.toolName, 'runCode');
  return [r.output, result];
}

test('the model computes 5 + 5 - 84**3 in the kernel and answers with it', { timeout: 120000 }, async () => {
  const tools = toolsFor(newSessionId('arith'));
  const model = scriptedModel([
    callTool('runCode', { code: '5 + 5 - 84**3' }),
    (prompt) => {
      const [output] = lastToolOutputs(prompt);
      assert.equal(output.type, 'json');
      return answer(`The result is ${output.value.result}.`);
    },
  ]);
  const result = await generateText({ model, tools, prompt: 'What is 5 + 5 - 84**3?', stopWhen: stepCountIs(5) });
  assert.equal(model.stepsPlayed(), 2);
  const [r] = toolResults(result);
  assert.equal(r.output.result, '-592694');
  assert.equal(r.output.error, null);
  assert.equal(r.output.timedOut, false);
  assert.match(result.text, /-592694/);
});

test('variables persist across two tool calls of a conversation', { timeout: 120000 }, async () => {
  const tools = toolsFor(newSessionId('persist'));
  const model = scriptedModel([
    callTool('runCode', { code: "import math\nnumbers = [3, 4]\nprint('stored')" }),
    callTool('runCode', { code: 'math.hypot(*numbers)' }),
    (prompt) => answer(`hypot is ${lastToolOutputs(prompt)[0].value.result}`),
  ]);
  const result = await generateText({ model, tools, prompt: 'two steps', stopWhen: stepCountIs(5) });
  const [first, second] = toolResults(result);
  assert.equal(first.output.stdout, 'stored\n');
  assert.equal(second.output.result, '5.0');
  assert.match(result.text, /5\.0/);

  // A second request of the same conversation (a new tool set, as a new HTTP request would build) sees them too.
  const [again] = await runOnce(createSandgateTools({ sandgate, sessionId: opened.at(-1) }), 'sum(numbers)');
  assert.equal(again.result, '7');
});

test('a matplotlib chart comes back as a display id; the PNG fetched by that id is valid', { timeout: 120000 }, async () => {
  const tools = toolsFor(newSessionId('chart'));
  const code = [
    'import matplotlib',
    'import matplotlib.pyplot as plt',
    'plt.plot([1, 2, 3], [1, 4, 9])',
    "plt.title('squares')",
    'plt.show()',
  ].join('\n');
  const [output] = await runOnce(tools, code);
  assert.equal(output.error, null, JSON.stringify(output.error));
  const pngs = output.displays.filter((d) => d.mimeTypes.includes('image/png'));
  assert.equal(pngs.length, 1, JSON.stringify(output.displays));
  // The model's copy of the output has only the id and MIME types, no image data.
  assert.ok(JSON.stringify(output).length < 2000, 'no image data in the tool output');
  const stored = await sandgate.getDisplay(pngs[0].id);
  assert.ok(stored, 'the display is kept by id');
  const png = Buffer.from(stored.data['image/png'], 'base64');
  assert.ok(png.length > 1000, `PNG of ${png.length} bytes`);
  assert.deepEqual(png.subarray(0, 8), PNG_SIGNATURE);
  assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
});

test('imagesToModel hands the PNG to the model as a file part', { timeout: 120000 }, async () => {
  const tools = toolsFor(newSessionId('vision'), { imagesToModel: true });
  let seen;
  const model = scriptedModel([
    callTool('runCode', { code: 'import matplotlib.pyplot as plt\nplt.bar([1, 2], [3, 1])\nplt.show()' }),
    (prompt) => {
      [seen] = lastToolOutputs(prompt);
      return answer('I see a bar chart');
    },
  ]);
  await generateText({ model, tools, prompt: 'draw', stopWhen: stepCountIs(4) });
  assert.equal(seen.type, 'content');
  const text = seen.value.find((p) => p.type === 'text');
  assert.ok(JSON.parse(text.text).displays.length >= 1);
  const files = seen.value.filter((p) => p.type !== 'text');
  assert.equal(files.length, 1, JSON.stringify(seen.value.map((p) => p.type)));
  assert.equal(files[0].mediaType, 'image/png');
  // ai 7's prompt has a file part with tagged data; ai 6's the base64 itself.
  let data = files[0].data;
  if (aiVersion === '7') {
    assert.equal(files[0].type, 'file');
    assert.equal(data.type, 'data');
    data = data.data;
  } else {
    assert.equal(files[0].type, 'file-data');
  }
  assert.deepEqual(Buffer.from(data, 'base64').subarray(0, 8), PNG_SIGNATURE);
});

test('a Python error gives its name, value and a traceback without ANSI codes', { timeout: 120000 }, async () => {
  const tools = toolsFor(newSessionId('error'));
  const [output] = await runOnce(tools, "def f(x):\n    return 1 / x\n\nprint('before')\nf(0)");
  assert.equal(output.stdout, 'before\n');
  assert.ok(output.error, 'an error');
  assert.equal(output.error.name, 'ZeroDivisionError');
  assert.match(output.error.value, /division by zero/);
  assert.match(output.error.traceback, /ZeroDivisionError/);
  assert.match(output.error.traceback, /return 1 \/ x/);
  assert.doesNotMatch(output.error.traceback, /\u001b\[/);
  assert.equal(output.result, null);
});

test('a timeout comes back as timed out, and the kernel keeps its state', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('timeout');
  const tools = toolsFor(sessionId);
  const [set] = await runOnce(tools, 'kept = 41');
  assert.equal(set.error, null);
  const started = Date.now();
  const [slow] = await runOnce(tools, "import time\nprint('sleeping', flush=True)\ntime.sleep(60)", { timeoutS: 2 });
  const took = Date.now() - started;
  assert.equal(slow.timedOut, true);
  assert.equal(slow.error.name, 'TimeoutError');
  assert.match(slow.error.value, /interrupted; variables defined before are kept/);
  assert.ok(took < 30000, `the timeout took ${took} ms`);
  const [after] = await runOnce(tools, 'kept + 1');
  assert.equal(after.result, '42');
  assert.equal(after.timedOut, false);
});

test('large output is trimmed for the model with a marker', { timeout: 120000 }, async () => {
  const tools = toolsFor(newSessionId('large'), { maxOutputChars: 2000 });
  const [output] = await runOnce(tools, "print('A' * 50000 + 'END')");
  assert.equal(output.truncated, true);
  assert.ok(output.stdout.length < 2200, `stdout of ${output.stdout.length} characters`);
  assert.match(output.stdout, /\[\.\.\. \d+ characters trimmed \.\.\.\]/);
  assert.match(output.stdout, /END\n$/);
});

test('an aborted tool call interrupts the kernel, which keeps its state; onOutput streams', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('abort');
  const controller = new AbortController();
  const events = [];
  // Abort once the code runs (its first output streamed), not before.
  const tools = toolsFor(sessionId, {
    onOutput: (e) => {
      events.push(e);
      if (e.type === 'stdout' && e.text.includes('working')) controller.abort();
    },
  });
  await runOnce(tools, 'survivor = "still here"');
  const output = await tools.runCode.execute(
    { code: "import time\nprint('working', flush=True)\ntime.sleep(60)" },
    { toolCallId: 'abort-1', messages: [], abortSignal: controller.signal }
  );
  assert.equal(output.error?.name, 'KeyboardInterrupt', JSON.stringify(output.error));
  assert.equal(output.stdout, 'working\n');
  assert.deepEqual(events.at(-1), { sessionId, toolCallId: 'abort-1', type: 'stdout', text: 'working\n' });
  const [after] = await runOnce(tools, 'survivor');
  assert.equal(after.result, "'still here'");
});

test('a conversation whose kernel is gone gets a new one, and the result says so', { timeout: 120000 }, async () => {
  const sessionId = newSessionId('gone');
  const tools = toolsFor(sessionId);
  const [first] = await runOnce(tools, 'lost = 1');
  assert.equal(first.note, undefined);
  const kernelId = (await store.get(sessionId)).kernels.python;
  assert.equal((await api('DELETE', `api/kernels/${kernelId}`)).status, 204);

  const [second] = await runOnce(tools, "'lost' in globals()");
  assert.equal(second.result, 'False');
  assert.match(second.note, /new one was started/);
  const now = await store.get(sessionId);
  assert.notEqual(now.kernels.python, kernelId);
  assert.equal((await api('GET', `api/kernels/${now.kernels.python}`)).status, 200);

  const [third] = await runOnce(tools, '1 + 1');
  assert.equal(third.note, undefined);
});
