// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector --cli)
// against /mcp: it lists the tools (and its --strict schema check finds no
// error), calls run_code, reads a resource a tool wrote.
// By hand: python3 run_with_gateway.py --sandboxed -- node --test $PWD/mcp_inspector.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const inspector = join(here, 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');
const base = process.env.SANDGATE_URL;
const endpoint = (base.endsWith('/') ? base : base + '/') + 'mcp';
// The Inspector keeps a catalog of servers under HOME: a throwaway one.
const home = mkdtempSync(join(tmpdir(), 'sandgate-inspector-'));

/** The Inspector's output for one method, parsed as JSON. */
async function inspect(...args) {
  const { stdout } = await promisify(execFile)(process.execPath, [
    inspector, '--cli', endpoint, '--transport', 'http',
    '--header', `Authorization: Bearer ${process.env.SANDGATE_TOKEN}`, ...args,
  ], { timeout: 60000, env: { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, 'mcp.json') } });
  return stdout;
}

test('the Inspector lists the tools, and their schemas pass its strict check', { timeout: 120000 }, async () => {
  const listed = JSON.parse(await inspect('--method', 'tools/list'));
  const names = listed.tools.map((t) => t.name);
  for (const name of ['run_code', 'run_shell', 'read_file', 'write_file', 'list_files'])
    assert.ok(names.includes(name), names.join(','));
  await inspect('--method', 'tools/list', '--strict');  // exits 6 on an error-severity finding
});

test('the Inspector calls run_code and a file written by a tool reads back as a resource', { timeout: 120000 }, async () => {
  const called = JSON.parse(await inspect('--method', 'tools/call', '--tool-name', 'run_code', '--tool-arg', 'code=6*7'));
  assert.equal(called.isError, false);
  assert.equal(called.structuredContent.result, '42');
  const sandbox = called.structuredContent.sandbox_id;
  const wrote = JSON.parse(await inspect('--method', 'tools/call', '--tool-name', 'write_file',
    '--tool-arg', 'path=inspected.txt', '--tool-arg', 'content=seen by the inspector', '--tool-arg', `sandbox_id=${sandbox}`));
  assert.equal(wrote.structuredContent.size_bytes, 21);
  const read = JSON.parse(await inspect('--method', 'resources/read', '--uri', `sandgate://sandboxes/${sandbox}/files/inspected.txt`));
  assert.equal(read.contents[0].text, 'seen by the inspector');
  await inspect('--method', 'tools/call', '--tool-name', 'close_sandbox', '--tool-arg', `sandbox_id=${sandbox}`);
});
