#!/usr/bin/env node
// The AI SDK's terminal UI (@ai-sdk/tui, ai 7) with a ToolLoopAgent that has
// the Sandgate tools, and a Sandgate sandbox session as its sandbox: the
// tools' kernels and commands and the session's files and processes are one
// sandbox.
//
//   npm install @ai-sdk/tui            # beside ai 7 and @sandgate/ai-sdk
//   SANDGATE_URL=http://127.0.0.1:8888 SANDGATE_TOKEN=... node examples/tui.mjs
//
// With a real model: SANDGATE_MODEL=PROVIDER:MODEL_ID, where @ai-sdk/PROVIDER
// is an installed provider package whose key is in the environment, e.g.
//   ANTHROPIC_API_KEY=... SANDGATE_MODEL=anthropic:claude-sonnet-4-5 node examples/tui.mjs
// Without SANDGATE_MODEL a scripted mock model (from ai/test) runs each prompt
// as Python with runCode (`!` before it: a shell command with runShell) and
// answers with what came back. SANDGATE_SESSION_ID names the session (the
// sandbox's metadata harness_session_id); the sandbox is deleted on exit.
import { ToolLoopAgent, stepCountIs } from 'ai';
import { runAgentTUI } from '@ai-sdk/tui';
import { InMemorySessionStore, createSandgateTools } from '@sandgate/ai-sdk';
import { createSandgateSandbox } from '@sandgate/ai-sdk/sandbox';

const url = process.env.SANDGATE_URL ?? 'http://127.0.0.1:8888';
const token = process.env.SANDGATE_TOKEN;
const sessionId = process.env.SANDGATE_SESSION_ID ?? `tui-${Date.now()}`;

const session = await createSandgateSandbox({ url, token, ttlS: 3600 }).createSession({ sessionId });
// The tools find the conversation's sandbox in their store: it is the session's.
const store = new InMemorySessionStore();
await store.set(sessionId, { sandboxId: session.id, kernels: {} });
const tools = createSandgateTools({ url, token, sessionId, store });

const agent = new ToolLoopAgent({
  model: process.env.SANDGATE_MODEL ? await providerModel(process.env.SANDGATE_MODEL) : await scriptedModel(),
  instructions:
    'You are a data analyst. Use runCode to compute (its state persists between calls of a language) ' +
    'and runShell for shell commands. ' +
    session.description,
  tools,
  stopWhen: stepCountIs(10),
});

try {
  await runAgentTUI({ title: `Sandgate ${session.id.slice(0, 8)}`, agent, sandbox: session });
} finally {
  await session.destroy();
}

// PROVIDER:MODEL_ID → the model of the installed @ai-sdk/PROVIDER package.
async function providerModel(spec) {
  const i = spec.indexOf(':');
  if (i < 0) throw new Error('SANDGATE_MODEL is PROVIDER:MODEL_ID, e.g. anthropic:claude-sonnet-4-5');
  const provider = spec.slice(0, i);
  const mod = await import(`@ai-sdk/${provider}`);
  return (mod[provider] ?? mod.default)(spec.slice(i + 1));
}

// A mock model that turns each prompt into a tool call, then answers with the result it reads back.
async function scriptedModel() {
  const { MockLanguageModelV4, simulateReadableStream } = await import('ai/test');
  const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } };
  const stream = (chunks) => ({ stream: simulateReadableStream({ chunks: [{ type: 'stream-start', warnings: [] }, ...chunks] }) });
  let n = 0;
  return new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last.role === 'tool') {
        const out = last.content.find((p) => p.type === 'tool-result')?.output;
        const v = out?.type === 'json' ? out.value : {};
        const text = v.error
          ? `That raised ${v.error.name}: ${v.error.value}`
          : v.exitCode !== undefined
            ? `The command exited with ${v.exitCode}: ${v.stdout.trim()}`
            : `The result is ${v.result ?? v.stdout.trim()}.`;
        return stream([
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: text },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
        ]);
      }
      const line = last.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
      const call = line.startsWith('!')
        ? { toolName: 'runShell', input: JSON.stringify({ command: line.slice(1) }) }
        : { toolName: 'runCode', input: JSON.stringify({ code: line }) };
      return stream([
        { type: 'tool-call', toolCallId: `call-${++n}`, ...call },
        { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
      ]);
    },
  });
}
