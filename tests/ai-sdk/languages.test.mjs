// runCode in every language (python, javascript, typescript, r, bash), driven
// by generateText with a scripted mock model, against a real sandgate with
// real sandboxes and real kernels: one kernel per language in the
// conversation's sandbox, started on first use and kept; charts out of band by
// id; errors; files shared; a language whose kernelspec is missing.
// By hand: python3 ../e2e/run_with_gateway.py --sandboxed -- node --test $PWD/languages.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { ai, sdk, url, token, kernelName, newSessionId, scriptedModel, callTool, answer, lastToolOutputs, toolResults, PNG_SIGNATURE } from './support.mjs';

const { generateText, stepCountIs } = ai;
const { createSandgateTools, Sandgate, InMemorySessionStore, InMemoryDisplayStore, KernelspecMissingError } = sdk;

const store = new InMemorySessionStore();
const displays = new InMemoryDisplayStore();
const sandgate = new Sandgate({ url, token, store, displays, kernelName, sandbox: { ttl_s: 900 } });
const opened = [];
// One conversation for most tests, as one chat would use every language in turn.
const sessionId = newSessionId('languages');

function toolsFor(id, extra = {}) {
  if (!opened.includes(id)) opened.push(id);
  return createSandgateTools({ sandgate, sessionId: id, ...extra });
}

test.after(async () => {
  for (const id of opened) await sandgate.endSession(id);
});

// One runCode call in a generateText loop; its output.
async function run(tools, code, language) {
  const model = scriptedModel([callTool('runCode', { code, ...(language ? { language } : {}) }), answer('done')]);
  const result = await generateText({ model, tools, prompt: 'run it', stopWhen: stepCountIs(4) });
  const [r] = toolResults(result);
  assert.equal(r.toolName, 'runCode');
  return r.output;
}

// What each language keeps from one call to the next, and what it gives back.
const STATE = {
  python: { set: 'import math\nsides = [3, 4]', use: 'math.hypot(*sides)', result: '5.0' },
  javascript: { set: 'const sides = [3, 4];\nfunction hypot(a, b) { return Math.sqrt(a * a + b * b); }', use: 'hypot(...sides)', result: '5' },
  typescript: {
    set: 'interface Pair { a: number; b: number }\nconst pair: Pair = { a: 3, b: 4 };',
    use: 'const h: number = Math.hypot(pair.a, pair.b);\nh',
    result: '5',
  },
  r: { set: 'sides <- c(3, 4)', use: 'sqrt(sum(sides^2))', result: '[1] 5' },
  bash: { set: 'SIDES="3 4"; cd /tmp', use: 'echo "$SIDES in $(pwd)"', stdout: '3 4 in /tmp\n' },
};
const KERNELSPECS = { javascript: 'javascript', typescript: 'typescript', r: 'ir', bash: 'bash' };

test('each language runs in a kernel of its own in the conversation sandbox, started on first use, and keeps its state', { timeout: 300000 }, async () => {
  const tools = toolsFor(sessionId);
  const languages = Object.keys(STATE);
  const steps = [
    ...languages.map((language) => callTool('runCode', { code: STATE[language].set, language })),
    ...languages.map((language) => callTool('runCode', { code: STATE[language].use, language })),
    (prompt) => answer(`R says ${lastToolOutputs(prompt)[0].value.stdout.trim()}`),
  ];
  const model = scriptedModel(steps);
  const result = await generateText({ model, tools, prompt: 'hypotenuse of 3 and 4, in every language', stopWhen: stepCountIs(steps.length + 1) });
  assert.equal(model.stepsPlayed(), steps.length);
  const outputs = toolResults(result).map((r) => r.output);
  assert.equal(outputs.length, 2 * languages.length);
  for (const [i, language] of languages.entries()) {
    const set = outputs[i];
    const use = outputs[languages.length + i];
    assert.equal(set.language, language);
    assert.equal(set.error, null, `${language}: ${JSON.stringify(set.error)}`);
    assert.equal(use.error, null, `${language}: ${JSON.stringify(use.error)}`);
    if (STATE[language].result) assert.equal(use.result, STATE[language].result, language);
    if (STATE[language].stdout) assert.equal(use.stdout, STATE[language].stdout, language);
    assert.equal(use.note, undefined, language);
  }
  assert.match(result.text, /3 4 in \/tmp/);

  // Five kernels, each of its language's kernelspec, all in the conversation's one sandbox.
  const rec = await store.get(sessionId);
  assert.deepEqual(Object.keys(rec.kernels).sort(), [...languages].sort());
  const sandbox = await sandgate.getSandbox(sessionId);
  assert.equal(sandbox.id, rec.sandboxId);
  const byId = new Map(sandbox.kernels.map((k) => [k.id, k.name]));
  assert.equal(byId.size, languages.length, JSON.stringify(sandbox.kernels));
  for (const [language, spec] of Object.entries(KERNELSPECS)) assert.equal(byId.get(rec.kernels[language]), spec, language);
  if (kernelName) assert.equal(byId.get(rec.kernels.python), kernelName);

  // A later request of the conversation (a new tool set) uses the same kernels.
  const again = await run(toolsFor(sessionId), 'sides.length', 'javascript');
  assert.equal(again.result, '2');
  assert.deepEqual((await store.get(sessionId)).kernels, rec.kernels);
});

/** Width and height from a PNG's IHDR. */
function pngSize(png) {
  assert.deepEqual(png.subarray(0, 8), PNG_SIGNATURE);
  assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
  return [png.readUInt32BE(16), png.readUInt32BE(20)];
}

// A bar chart drawn into a PNG with nothing but zlib: the same source makes
// the chart in the JavaScript kernel and the expected bytes here.
const BAR_CHART = `
function crc32(bytes) {
  let crc = 0xffffffff;
  for (const b of bytes) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
function pngChunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])));
  return Buffer.concat([head, data, crc]);
}
function barChart(values, width = 60, height = 40) {
  const rows = [];
  const bar = Math.floor(width / values.length);
  const top = Math.max(...values);
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3, 255);
    row[0] = 0;
    for (let x = 0; x < width; x++) {
      const i = Math.floor(x / bar);
      if (i < values.length && x % bar < bar - 2 && height - y <= (values[i] / top) * height) row.set([30, 90, 200], 1 + x * 3);
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const zlib = require('zlib');
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', zlib.deflateSync(Buffer.concat(rows))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}
`;

test('a JavaScript chart (display.png of a Buffer) comes out of band by id, byte for byte', { timeout: 120000 }, async () => {
  const tools = toolsFor(sessionId);
  const output = await run(tools, `${BAR_CHART}\ndisplay.png(barChart([3, 1, 4, 1, 5]));`, 'javascript');
  assert.equal(output.error, null, JSON.stringify(output.error));
  const pngs = output.displays.filter((d) => d.mimeTypes.includes('image/png'));
  assert.equal(pngs.length, 1, JSON.stringify(output.displays));
  assert.ok(JSON.stringify(output).length < 2000, 'no image data in the tool output');
  const stored = await sandgate.getDisplay(pngs[0].id);
  const png = Buffer.from(stored.data['image/png'], 'base64');
  assert.deepEqual(pngSize(png), [60, 40]);
  // The same code here, on the same Node (the sandbox's /usr is the host's), makes the same bytes.
  const expected = new Function('require', `${BAR_CHART}\nreturn barChart([3, 1, 4, 1, 5]);`)(createRequire(import.meta.url));
  assert.deepEqual(png, expected);
});

test('a TypeScript SVG chart comes out of band by id; a type error is reported and the cell does not run', { timeout: 120000 }, async () => {
  const tools = toolsFor(sessionId);
  const code = [
    'const values: number[] = [3, 1, 4];',
    "const bars: string = values.map((v, i) => `<rect x=\"${i * 20}\" y=\"${40 - v * 10}\" width=\"15\" height=\"${v * 10}\"/>`).join('');",
    'display.svg(`<svg xmlns="http://www.w3.org/2000/svg" width="60" height="40">${bars}</svg>`);',
  ].join('\n');
  const output = await run(tools, code, 'typescript');
  assert.equal(output.error, null, JSON.stringify(output.error));
  const svgs = output.displays.filter((d) => d.mimeTypes.includes('image/svg+xml'));
  assert.equal(svgs.length, 1, JSON.stringify(output.displays));
  const stored = await sandgate.getDisplay(svgs[0].id);
  assert.equal(
    stored.data['image/svg+xml'],
    '<svg xmlns="http://www.w3.org/2000/svg" width="60" height="40"><rect x="0" y="10" width="15" height="30"/><rect x="20" y="30" width="15" height="10"/><rect x="40" y="0" width="15" height="40"/></svg>'
  );

  const bad = await run(tools, "let ran = true;\nconst n: number = 'not a number';", 'typescript');
  assert.equal(bad.error?.name, 'TSError', JSON.stringify(bad.error));
  assert.match(bad.error.value, /Type 'string' is not assignable to type 'number'/);
  const after = await run(tools, "typeof ran", 'javascript');
  assert.equal(after.result, "'undefined'");
});

test('an R ggplot2 chart and a base plot come out of band as PNG by id', { timeout: 180000 }, async () => {
  const tools = toolsFor(sessionId);
  const output = await run(
    tools,
    "library(ggplot2)\nprint(ggplot(data.frame(a = 1:10, b = (1:10)^2), aes(a, b)) + geom_line() + ggtitle('squares'))\nplot(1:10, main = 'base')",
    'r'
  );
  assert.equal(output.error, null, JSON.stringify(output.error));
  const pngs = output.displays.filter((d) => d.mimeTypes.includes('image/png'));
  assert.equal(pngs.length, 2, JSON.stringify(output.displays));
  for (const d of pngs) {
    const png = Buffer.from((await sandgate.getDisplay(d.id)).data['image/png'], 'base64');
    const [w, h] = pngSize(png);
    assert.ok(w >= 100 && h >= 100, `${w}x${h}`);
    assert.ok(png.length > 2000, `PNG of ${png.length} bytes`);
  }
});

test("R's printed values (IRkernel's display_data) are the result; a data.frame is a display as well", { timeout: 120000 }, async () => {
  const tools = toolsFor(sessionId);
  const two = await run(tools, '1 + 1\nc(3, 4)', 'r');
  assert.equal(two.result, '[1] 2\n[1] 3 4');
  assert.deepEqual(two.displays, []);
  const df = await run(tools, 'data.frame(name = c("a", "b"), n = 1:2)', 'r');
  assert.equal(df.result, '  name n\n1 a    1\n2 b    2');
  assert.equal(df.displays.length, 1, JSON.stringify(df.displays));
  assert.match((await sandgate.getDisplay(df.displays[0].id)).data['text/html'], /<table/);
  assert.equal((await run(tools, 'invisible(7)', 'r')).result, null);
});

test('a Python chart in the sandbox comes out of band by id too', { timeout: 120000 }, async () => {
  const tools = toolsFor(sessionId);
  const output = await run(tools, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()");
  assert.equal(output.language, 'python');
  const pngs = output.displays.filter((d) => d.mimeTypes.includes('image/png'));
  assert.equal(pngs.length, 1, JSON.stringify(output.displays));
  assert.ok(pngSize(Buffer.from((await sandgate.getDisplay(pngs[0].id)).data['image/png'], 'base64'))[0] > 100);
});

test('errors come back with their name and value in each language, and the kernel keeps its state', { timeout: 180000 }, async () => {
  const tools = toolsFor(sessionId);
  const errors = {
    python: ["raise ValueError('bad input')", 'ValueError', /bad input/],
    javascript: ["throw new RangeError('bad input')", 'RangeError', /bad input/],
    typescript: ["const f = (x: number): number => { throw new RangeError('bad input ' + x); };\nf(1)", 'RangeError', /bad input 1/],
    r: ["stop('bad input')", undefined, /bad input/],
    bash: ['false', 'ExitStatus', /^1$/],
  };
  for (const [language, [code, name, value]] of Object.entries(errors)) {
    const output = await run(tools, code, language);
    assert.ok(output.error, `${language}: an error`);
    if (name) assert.equal(output.error.name, name, language);
    assert.match(output.error.value, value, language);
    assert.doesNotMatch(output.error.traceback, /\u001b\[/, language);
    assert.equal(output.result, null, language);
  }
  // The state from the first test is still there.
  assert.equal((await run(tools, 'sqrt(sum(sides^2))', 'r')).result, '[1] 5');
  assert.equal((await run(tools, 'hypot(...sides)', 'javascript')).result, '5');
});

test('the kernels of all languages and runShell share the workspace', { timeout: 180000 }, async () => {
  const tools = toolsFor(sessionId);
  const model = scriptedModel([
    callTool('runCode', { language: 'python', code: "open('/workspace/numbers.csv', 'w').write('n\\n2\\n4\\n9\\n')" }),
    callTool('runCode', { language: 'r', code: "mean(read.csv('/workspace/numbers.csv')$n)" }),
    callTool('runCode', { language: 'javascript', code: "require('fs').readFileSync('/workspace/numbers.csv', 'utf8').trim().split('\\n').slice(1).map(Number).reduce((a, b) => a + b)" }),
    callTool('runCode', { language: 'bash', code: 'wc -l < /workspace/numbers.csv' }), // its cwd is /tmp since the first test
    callTool('runShell', { command: 'tail -n 1 numbers.csv' }),
    (prompt) => answer(`last row ${lastToolOutputs(prompt)[0].value.stdout.trim()}`),
  ]);
  const result = await generateText({ model, tools, prompt: 'numbers', stopWhen: stepCountIs(8) });
  const [py, r, js, bash, shell] = toolResults(result).map((x) => x.output);
  assert.equal(py.error, null);
  assert.equal(r.result, '[1] 5');
  assert.equal(js.result, '15');
  assert.equal(bash.stdout.trim(), '4');
  assert.equal(shell.stdout, '9\n');
  assert.match(result.text, /last row 9/);
});

test('a language whose kernelspec the gateway lacks is a tool error naming it, and the sandbox is kept', { timeout: 120000 }, async () => {
  const id = newSessionId('no-kernelspec');
  opened.push(id);
  const missing = new Sandgate({ url, token, store, displays, kernelName, kernelNames: { r: 'no-such-kernelspec' }, sandbox: { ttl_s: 600 } });
  const tools = createSandgateTools({ sandgate: missing, sessionId: id });
  let seen;
  const model = scriptedModel([
    callTool('runCode', { language: 'bash', code: 'echo ready' }),
    callTool('runCode', { language: 'r', code: '1 + 1' }),
    (prompt) => {
      [seen] = lastToolOutputs(prompt);
      return answer('R is not available here');
    },
  ]);
  const result = await generateText({ model, tools, prompt: 'use R', stopWhen: stepCountIs(5) });
  const { sandboxId } = await store.get(id);
  const failed = result.steps.flatMap((s) => s.content).find((p) => p.type === 'tool-error');
  assert.ok(failed, 'a tool error');
  assert.ok(failed.error instanceof KernelspecMissingError, String(failed.error));
  assert.equal(failed.error.kernelspec, 'no-such-kernelspec');
  assert.equal(failed.error.language, 'r');
  assert.ok(failed.error.available.includes('javascript'), failed.error.available.join());
  // What the model read: the error text, naming the kernelspec.
  assert.equal(seen.type, 'error-text');
  assert.match(seen.value, /no kernelspec "no-such-kernelspec", so r code cannot run here/);
  // Not taken for a sandbox that was gone: the same sandbox, its bash kernel, no R kernel.
  const rec = await store.get(id);
  assert.equal(rec.sandboxId, sandboxId);
  assert.deepEqual(Object.keys(rec.kernels), ['bash']);
  assert.equal((await missing.getSandbox(id)).kernels.length, 1);
});

test('languages limits what runCode offers; its description names them and the first is the default', { timeout: 120000 }, async () => {
  const id = newSessionId('only-js');
  const tools = toolsFor(id, { languages: ['javascript', 'bash'] });
  assert.match(tools.runCode.description, /`language` picks the kernel: javascript, bash \(default javascript\)/);
  assert.match(tools.runCode.description, /display\.png/);
  assert.doesNotMatch(tools.runCode.description, /matplotlib|ggplot2/);
  const output = await run(tools, '[1, 2, 3].map((x) => x * 2)');
  assert.equal(output.language, 'javascript');
  assert.equal(output.result, '[ 2, 4, 6 ]');
  const model = scriptedModel([callTool('runCode', { language: 'python', code: '1' }), answer('no python')]);
  const result = await generateText({ model, tools, prompt: 'python', stopWhen: stepCountIs(3) });
  const failed = result.steps.flatMap((s) => s.content).find((p) => p.type === 'tool-error');
  assert.ok(failed, 'python is refused by the input schema');
  assert.deepEqual(Object.keys((await store.get(id)).kernels), ['javascript']);
});
