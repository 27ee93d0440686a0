// The MCP endpoint (/mcp) with real clients: the official TypeScript SDK's
// Client over its Streamable HTTP transport (sessions, 2025-11-25), and the
// AI SDK's createMCPClient (@ai-sdk/mcp, stateless 2026-07-28) feeding a
// chart to a scripted model as an image part.
// By hand: python3 ../e2e/run_with_gateway.py --sandboxed -- node --test $PWD/mcp.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ai, importDependency, packageDir, url, token, PNG_SIGNATURE, scriptedModel, callTool, answer, lastToolOutputs } from './support.mjs';

// The SDK exports its modules by a "./*" pattern.
const mcpSdk = (file) => import(pathToFileURL(join(packageDir, 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm', file)).href);
const { Client } = await mcpSdk('client/index.js');
const { StreamableHTTPClientTransport } = await mcpSdk('client/streamableHttp.js');
const { createMCPClient } = await importDependency('@ai-sdk/mcp');

const endpoint = new URL('mcp', url.endsWith('/') ? url : url + '/');
const CHART = "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()";

async function connect(bearer = token) {
  const client = new Client({ name: 'sandgate-mcp-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(endpoint, {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  await client.connect(transport);
  return { client, transport };
}

let session;
before(async () => {
  session = await connect();
});
after(async () => {
  const sandbox = session?.sandboxId;
  if (sandbox) await session.client.callTool({ name: 'close_sandbox', arguments: { sandbox_id: sandbox } }).catch(() => {});
  await session?.transport.terminateSession().catch(() => {});
  await session?.client.close();
});

test('the SDK client initializes and lists the tools with their schemas', { timeout: 60000 }, async () => {
  assert.equal(session.client.getServerVersion().name, 'sandgate');
  assert.ok(session.transport.sessionId, 'a session id');
  const { tools } = await session.client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ['run_code', 'run_shell', 'create_sandbox', 'list_sandboxes', 'close_sandbox', 'read_file', 'write_file', 'list_files'])
    assert.ok(names.includes(name), `${name} in ${names}`);
  const runCode = tools.find((t) => t.name === 'run_code');
  assert.deepEqual(runCode.inputSchema.required, ['code']);
  assert.ok(runCode.inputSchema.properties.language.enum.includes('python'));
  assert.equal(runCode.outputSchema.type, 'object');
});

test('state persists across run_code calls and a chart arrives as a PNG image', { timeout: 120000 }, async () => {
  const first = await session.client.callTool({ name: 'run_code', arguments: { code: 'x = 40\nprint("set")' } });
  assert.equal(first.isError, false, JSON.stringify(first));
  assert.equal(first.structuredContent.stdout, 'set\n');
  session.sandboxId = first.structuredContent.sandbox_id;
  const second = await session.client.callTool({ name: 'run_code', arguments: { code: 'x + 2' } });
  assert.equal(second.structuredContent.result, '42');
  assert.equal(second.structuredContent.sandbox_id, session.sandboxId, 'the session keeps its sandbox');
  assert.deepEqual(second.content, [{ type: 'text', text: '42' }]);

  const chart = await session.client.callTool({ name: 'run_code', arguments: { code: CHART } });
  const images = chart.content.filter((c) => c.type === 'image');
  assert.equal(images.length, 1, JSON.stringify(chart.content.map((c) => c.type)));
  assert.equal(images[0].mimeType, 'image/png');
  assert.deepEqual(Buffer.from(images[0].data, 'base64').subarray(0, 8), PNG_SIGNATURE);
});

test('a cancelled call interrupts the busy kernel, which keeps its state', { timeout: 120000 }, async () => {
  await session.client.callTool({ name: 'run_code', arguments: { code: 'kept = "still here"' } });
  const abort = new AbortController();
  const busy = session.client.callTool(
    { name: 'run_code', arguments: { code: 'import time\nwhile True:\n    time.sleep(0.05)' } },
    undefined,
    { signal: abort.signal },
  );
  setTimeout(() => abort.abort('enough'), 1500);
  await assert.rejects(busy);
  // The loop was interrupted: the next cell runs (it would wait behind the loop otherwise).
  const after = await session.client.callTool({ name: 'run_code', arguments: { code: 'kept' } });
  assert.equal(after.structuredContent.result, "'still here'");
});

test('errors: an exception is a tool error, an unknown tool a protocol error, bad arguments a tool error', { timeout: 60000 }, async () => {
  const raised = await session.client.callTool({ name: 'run_code', arguments: { code: '1/0' } });
  assert.equal(raised.isError, true);
  assert.equal(raised.structuredContent.error.ename, 'ZeroDivisionError');
  assert.match(raised.content.at(-1).text, /ZeroDivisionError: division by zero/);
  await assert.rejects(session.client.callTool({ name: 'rm_rf', arguments: {} }), (e) => e.code === -32602 && /Unknown tool: rm_rf/.test(e.message));
  const bad = await session.client.callTool({ name: 'run_code', arguments: { code: 7 } });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /arguments\.code must be a string/);
  const missing = await session.client.callTool({ name: 'close_sandbox', arguments: { sandbox_id: '00000000-0000-4000-8000-000000000000' } });
  assert.equal(missing.isError, true);
  assert.match(missing.content[0].text, /Sandbox does not exist/);
});

test('files written are read back, listed and readable as resources', { timeout: 60000 }, async () => {
  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const wrote = await session.client.callTool({ name: 'write_file', arguments: { path: 'out/all.bin', content: bytes.toString('base64'), encoding: 'base64' } });
  assert.equal(wrote.structuredContent.size_bytes, 256);
  const read = await session.client.callTool({ name: 'read_file', arguments: { path: 'out/all.bin' } });
  assert.deepEqual(Buffer.from(read.structuredContent.content, 'base64'), bytes);
  await session.client.callTool({ name: 'write_file', arguments: { path: 'notes.md', content: '# héllo\n' } });
  const listed = await session.client.callTool({ name: 'list_files', arguments: {} });
  const notes = listed.structuredContent.entries.find((e) => e.name === 'notes.md');
  assert.ok(notes?.uri, JSON.stringify(listed.structuredContent));
  const { resources } = await session.client.listResources();
  assert.ok(resources.some((r) => r.uri === notes.uri), JSON.stringify(resources));
  const { contents } = await session.client.readResource({ uri: notes.uri });
  assert.equal(contents[0].text, '# héllo\n');
  const shell = await session.client.callTool({ name: 'run_shell', arguments: { command: 'wc -c < out/all.bin; exit 3' } });
  assert.equal(shell.structuredContent.stdout.trim(), '256');
  assert.equal(shell.structuredContent.exit_code, 3);
});

test('a wrong token is refused at connect', { timeout: 30000 }, async () => {
  await assert.rejects(connect('not-the-token'), (e) => e.code === 401 && /Invalid token/.test(e.message));
});

test('the AI SDK client speaks 2026-07-28 and its model sees the chart as an image part', { timeout: 120000 }, async () => {
  const mcp = await createMCPClient({ transport: { type: 'http', url: endpoint.href, headers: { Authorization: `Bearer ${token}` } } });
  try {
    const tools = await mcp.tools();
    assert.ok(tools.run_code, Object.keys(tools).join(','));
    let seen;
    const model = scriptedModel([
      callTool('run_code', { code: CHART }),
      (prompt) => {
        seen = lastToolOutputs(prompt);
        return answer('a chart');
      },
    ]);
    const result = await ai.generateText({ model, tools, prompt: 'plot', stopWhen: ai.stepCountIs(3) });
    assert.equal(result.text, 'a chart');
    const parts = seen[0].value;
    const image = parts.find((p) => p.type === 'file' || p.type === 'image-data' || p.type === 'media');
    assert.ok(image, JSON.stringify(parts).slice(0, 500));
    assert.equal(image.mediaType, 'image/png');
    const data = image.data?.data ?? image.data;
    assert.deepEqual(Buffer.from(data, 'base64').subarray(0, 8), PNG_SIGNATURE);
  } finally {
    await mcp.close();
  }
});
