// Shared by the @sandgate/ai-sdk tests: the package (built into
// share/ai-sdk/dist by `npx tsc`), `ai` and `ai/test` from the package's own
// node_modules (installed by `npm ci` there), the gateway that
// run_with_gateway.py started, and a scripted mock language model.
//
// SANDGATE_AI_VERSION picks the AI SDK: 7 (default; the package's `ai`) or 6
// (`ai6`, installed as npm:ai@^6). The package itself then imports that one
// too (ai-alias-hooks.mjs), so the whole loop runs on one version.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const packageDir = join(here, '..', '..', 'share', 'ai-sdk');

const dist = join(packageDir, 'dist', 'index.js');
assert.ok(existsSync(dist), `${dist} is missing: run npm ci && npx tsc in share/ai-sdk (share/dev/test does)`);

/** The major version of `ai` the tests run on. */
export const aiVersion = process.env.SANDGATE_AI_VERSION || '7';
const aiPackages = { 6: 'ai6', 7: 'ai' };
const aiPackage = aiPackages[aiVersion];
assert.ok(aiPackage, `SANDGATE_AI_VERSION=${aiVersion}: one of ${Object.keys(aiPackages).join(', ')}`);

function packageJson(name) {
  const file = join(packageDir, 'node_modules', name, 'package.json');
  assert.ok(existsSync(file), `${file} is missing: run npm ci in share/ai-sdk (share/dev/test does)`);
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** The ESM entry of a dependency of the package, from its package.json exports. */
export async function importDependency(name, subpath = '.') {
  const entry = packageJson(name).exports?.[subpath];
  const file = typeof entry === 'string' ? entry : entry?.import;
  assert.ok(file, `${name} has no ESM export ${subpath}`);
  return import(pathToFileURL(join(packageDir, 'node_modules', name, file)).href);
}

const installed = packageJson(aiPackage).version;
assert.equal(installed.split('.')[0], aiVersion, `node_modules/${aiPackage} is ai ${installed}, not ai ${aiVersion}`);
if (aiPackage !== 'ai') {
  register('./ai-alias-hooks.mjs', import.meta.url, {
    data: { distUrl: pathToFileURL(join(packageDir, 'dist') + '/').href, alias: aiPackage },
  });
}

export const sdk = await import(pathToFileURL(dist).href);
export const ai = await importDependency(aiPackage);
export const aiTest = await importDependency(aiPackage, './test');
/** The mock model class of this version's language model specification. */
const MockLanguageModel = aiTest.MockLanguageModelV4 ?? aiTest.MockLanguageModelV3;

export const url = process.env.SANDGATE_URL;
export const token = process.env.SANDGATE_TOKEN;
assert.ok(url && token, 'run me through tests/e2e/run_with_gateway.py');
/** The kernelspec the tools use; the gateway's default unless SANDGATE_AI_KERNEL names one. */
export const kernelName = process.env.SANDGATE_AI_KERNEL || undefined;

export async function api(method, path, body) {
  const res = await fetch(url + path, {
    method,
    headers: { Authorization: `token ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

let sessions = 0;
/** A conversation id of its own for each test. */
export function newSessionId(what) {
  return `test-${what}-${process.pid}-${++sessions}`;
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

let calls = 0;
/** A model step that calls one tool. */
export function callTool(toolName, input) {
  return {
    content: [{ type: 'tool-call', toolCallId: `call-${++calls}`, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

/** A model step that answers with text. */
export function answer(text) {
  return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
}

/** The outputs of the tool results in the last tool message of a prompt, as the model receives them. */
export function lastToolOutputs(prompt) {
  const msg = [...prompt].reverse().find((m) => m.role === 'tool');
  assert.ok(msg, 'the prompt has a tool message');
  return msg.content.filter((p) => p.type === 'tool-result').map((p) => p.output);
}

/**
 * A mock language model (MockLanguageModelV4 on ai 7, V3 on ai 6) that plays `steps` in order; each step is a model
 * result, or a function of the prompt (what the model has seen so far,
 * tool results included) that returns one.
 */
export function scriptedModel(steps) {
  let i = 0;
  const model = new MockLanguageModel({
    doGenerate: async (options) => {
      assert.ok(i < steps.length, `the model was called ${i + 1} times; the script has ${steps.length} steps`);
      const step = steps[i++];
      return typeof step === 'function' ? step(options.prompt) : step;
    },
  });
  model.stepsPlayed = () => i;
  return model;
}

/** The tool results of every step of a generateText run, in order; a tool that threw fails the test with its error. */
export function toolResults(result) {
  for (const step of result.steps) {
    const failed = step.content.find((p) => p.type === 'tool-error');
    if (failed) throw failed.error instanceof Error ? failed.error : new Error(`${failed.toolName} failed: ${JSON.stringify(failed.error)}`);
  }
  return result.steps.flatMap((s) => s.toolResults);
}

/**
 * Polls `probe` (every 100 ms) until it returns a truthy value, which it
 * returns; fails naming `what` after `ms`. For states with no event to wait on
 * (a sandbox's expiry).
 */
export async function waitFor(what, ms, probe) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
