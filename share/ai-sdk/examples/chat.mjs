#!/usr/bin/env node
// A terminal chat with streamText and the Sandgate tools.
//
//   SANDGATE_URL=http://127.0.0.1:8888 SANDGATE_TOKEN=... node examples/chat.mjs
//
// With a real model: SANDGATE_MODEL=PROVIDER:MODEL_ID, where @ai-sdk/PROVIDER is
// an installed provider package whose key is in the environment, e.g.
//   npm install @ai-sdk/openai && OPENAI_API_KEY=... SANDGATE_MODEL=openai:gpt-4.1-mini node examples/chat.mjs
//   npm install @ai-sdk/anthropic && ANTHROPIC_API_KEY=... SANDGATE_MODEL=anthropic:claude-sonnet-4-5 node examples/chat.mjs
// Without SANDGATE_MODEL a scripted mock model (from ai/test) runs each line
// you type with runCode, as Python, or in the language a prefix names:
//   %js const xs = [3, 1, 4]; display.html(`<b>${xs.length}</b>`); xs.reduce((a, b) => a + b)
//   %ts / %r / %bash / %python
// (lines starting with `!` with runShell), and reports what came back: the
// whole loop, no key needed.
//
// SANDGATE_NETWORK sets the sandbox's network (a mode, or a JSON allow-list
// within the gateway's ceiling), e.g.
//   SANDGATE_NETWORK='{"mode":"allow","hosts":["pypi.org","files.pythonhosted.org"],"ports":[443]}'
// and `/network VALUE` (same form) changes it during the chat with setNetwork.
// SANDGATE_SANDBOX=0 uses kernels per conversation without the sandbox API
// (for gateways that serve only the Kernel Gateway API; no runShell then).
// Charts are saved as PNG files under ./sandgate-displays/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { streamText, stepCountIs } from 'ai';
import { Sandgate, createSandgateTools } from '@sandgate/ai-sdk';

const url = process.env.SANDGATE_URL ?? 'http://127.0.0.1:8888';
const token = process.env.SANDGATE_TOKEN;
const network = process.env.SANDGATE_NETWORK ? parseNetwork(process.env.SANDGATE_NETWORK) : undefined;
const sandbox = process.env.SANDGATE_SANDBOX === '0' ? false : { ttl_s: 3600, ...(network ? { network } : {}) };
const sandgate = new Sandgate({ url, token, sandbox });
const sessionId = `chat-${Date.now()}`;
const tools = createSandgateTools({ sandgate, sessionId });
const model = process.env.SANDGATE_MODEL ? await providerModel(process.env.SANDGATE_MODEL) : await scriptedModel();

const system =
  'You are a data analyst with a sandbox. Use runCode to compute and plot (Python unless another ' +
  'language suits better); state is kept between calls of a language. Use runShell for shell ' +
  'commands. Answer briefly.';
const messages = [];
const rl = createInterface({ input: process.stdin });
console.log(`sandgate chat (${process.env.SANDGATE_MODEL ?? 'scripted mock model'}); an empty line ends it.`);

try {
  process.stdout.write('\nyou> ');
  for await (const raw of rl) {
    const line = raw.trim();
    if (!line) break;
    if (!process.stdin.isTTY) process.stdout.write(line + '\n');
    if (line.startsWith('/network ')) {
      await changeNetwork(line.slice('/network '.length));
      process.stdout.write('\nyou> ');
      continue;
    }
    messages.push({ role: 'user', content: line });
    const result = streamText({ model, system, messages, tools, stopWhen: stepCountIs(8) });
    process.stdout.write('assistant> ');
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') process.stdout.write(part.text);
      else if (part.type === 'tool-call') console.log(`\n  [${part.toolName}] ${JSON.stringify(part.input)}`);
      else if (part.type === 'tool-result') await showToolResult(part.output);
      else if (part.type === 'tool-error' || part.type === 'error') console.log(`\n  [error] ${part.error?.request ? part.error.request + ": " : ""}${part.error?.message ?? part.error}`);
    }
    messages.push(...(await result.response).messages);
    process.stdout.write('\n\nyou> ');
  }
} finally {
  rl.close();
  await sandgate.endSession(sessionId);
}

// A network mode (`none`, `open`, ...) or a JSON allow-list.
function parseNetwork(text) {
  const t = text.trim();
  return t.startsWith('{') || t.startsWith('"') ? JSON.parse(t) : t;
}

async function changeNetwork(text) {
  try {
    const { value } = await sandgate.setNetwork(sessionId, parseNetwork(text));
    console.log(`  network: ${JSON.stringify(value.network)}`);
  } catch (e) {
    // NetworkRefusedError (above the gateway's ceiling, e.host names the host), InvalidNetworkError, ...
    console.log(`  [${e.name}] ${e.message}`);
  }
}

async function showToolResult(output) {
  const show = (label, text) => text && console.log(`  ${label}: ${text.trimEnd().replace(/\n/g, '\n    ')}`);
  if (output.note) console.log(`  note: ${output.note}`);
  show('stdout', output.stdout);
  show('stderr', output.stderr);
  show('result', output.result);
  if (output.exitCode !== undefined) console.log(`  exit code: ${output.exitCode}`);
  if (output.error) show('error', `${output.error.name}: ${output.error.value}`);
  for (const d of output.displays ?? []) {
    const stored = await sandgate.getDisplay(d.id);
    if (stored?.data['image/png']) {
      mkdirSync('sandgate-displays', { recursive: true });
      const file = join('sandgate-displays', `${d.id}.png`);
      writeFileSync(file, Buffer.from(stored.data['image/png'], 'base64'));
      console.log(`  chart saved: ${file}`);
    } else {
      console.log(`  display ${d.id}: ${d.mimeTypes.join(', ')}`);
    }
  }
}

// PROVIDER:MODEL_ID → the model of the installed @ai-sdk/PROVIDER package.
async function providerModel(spec) {
  const i = spec.indexOf(':');
  if (i < 0) throw new Error('SANDGATE_MODEL is PROVIDER:MODEL_ID, e.g. openai:gpt-4.1-mini');
  const provider = spec.slice(0, i);
  const pkg = `@ai-sdk/${provider}`;
  let mod;
  try {
    mod = await import(pkg);
  } catch {
    throw new Error(`SANDGATE_MODEL names ${pkg}: install it with npm install ${pkg}`);
  }
  const factory = mod[provider] ?? mod.default;
  if (typeof factory !== 'function') throw new Error(`${pkg} exports no ${provider}()`);
  return factory(spec.slice(i + 1));
}

// A mock model (MockLanguageModelV4 on ai 7, V3 on ai 6) that turns each user
// line into a tool call, then reports the tool result it reads back from the prompt.
async function scriptedModel() {
  const { MockLanguageModelV4, MockLanguageModelV3, simulateReadableStream } = await import('ai/test');
  const MockLanguageModel = MockLanguageModelV4 ?? MockLanguageModelV3;
  const prefixes = { '%python': 'python', '%py': 'python', '%javascript': 'javascript', '%js': 'javascript', '%typescript': 'typescript', '%ts': 'typescript', '%r': 'r', '%bash': 'bash' };
  const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } };
  let n = 0;
  const stream = (chunks) => ({ stream: simulateReadableStream({ chunks: [{ type: 'stream-start', warnings: [] }, ...chunks] }) });
  return new MockLanguageModel({
    doStream: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last.role === 'tool') {
        const out = last.content.find((p) => p.type === 'tool-result')?.output;
        const value = out?.type === 'json' ? out.value : out?.value;
        const text = describe(value);
        return stream([
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: text },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
        ]);
      }
      const line = last.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
      const [first, ...rest] = line.split(' ');
      const language = prefixes[first];
      const call = line.startsWith('!')
        ? { toolName: 'runShell', input: JSON.stringify({ command: line.slice(1) }) }
        : { toolName: 'runCode', input: JSON.stringify(language ? { code: rest.join(' '), language } : { code: line }) };
      return stream([
        { type: 'tool-call', toolCallId: `call-${++n}`, ...call },
        { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
      ]);
    },
  });
}

function describe(v) {
  if (!v || typeof v !== 'object') return 'The tool returned nothing I can read.';
  if (v.error) return `That raised ${v.error.name}: ${v.error.value}`;
  if (v.exitCode !== undefined) return `The command exited with ${v.exitCode}.`;
  if (v.result !== null && v.result !== undefined) return `The result is ${v.result}.`;
  if (v.displays?.length) return `I made ${v.displays.length} display(s).`;
  return v.stdout ? 'Done; the output is above.' : 'Done.';
}
