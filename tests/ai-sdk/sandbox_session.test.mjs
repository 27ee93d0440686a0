// @ts-check
// The sandbox session of @sandgate/ai-sdk/sandbox (ai 7's Experimental_SandboxSession)
// against a real sandgate with real sandboxes: files anywhere in the sandbox's
// tree and their errors, spawn (stdin, streams, wait, kill, abort), run with
// maxOutputLength, and generateText running anthropic.tools.bash_20250124()
// in the session. tsc checks this file against the installed ai 7
// (tests/ai-sdk/tsconfig.json: ai_sdk_typecheck_tests). By hand:
//   python3 ../e2e/run_with_gateway.py --sandboxed -- node --test $PWD/sandbox_session.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createSandgateSandbox } from '../../share/ai-sdk/dist/sandbox/index.js';
import { ai, api, url, token, importDependency, scriptedModel, callTool, answer, lastToolOutputs, toolResults, waitFor } from './support.mjs';

const { anthropic } = await importDependency('@ai-sdk/anthropic');
const provider = createSandgateSandbox({ url: String(url), token, ttlS: 600 });
const session = await provider.createSession();
/** The session as the AI SDK types it: every member checked against ai 7's definition. */
const sandbox = /** @satisfies {import('ai').Experimental_SandboxSession} */ (session);
const enc = new TextEncoder();
const dec = new TextDecoder();

test.after(() => session.destroy());

/** A PromiseLike of the session as the Promise assert.rejects takes. @template T @param {PromiseLike<T>} p */
const rejecting = (p) => Promise.resolve(p);

/** @param {ReadableStream<Uint8Array>} stream */
async function bytesOf(stream) {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Reads `stream` until its text so far ends with `text`. @param {ReadableStreamDefaultReader<Uint8Array>} reader @param {string} text */
async function readUntil(reader, text) {
  let got = '';
  while (!got.endsWith(text)) {
    const { done, value } = await reader.read();
    assert.ok(!done, `the stream ended before ${JSON.stringify(text)}; it gave ${JSON.stringify(got)}`);
    got += dec.decode(value);
  }
  return got;
}

test('files anywhere in the tree: write, read, lines, encodings, stat, list, delete', { timeout: 60000 }, async () => {
  await sandbox.writeTextFile({ path: 'notes/a.txt', content: 'one\ntwo\nthree\nfour\n' });
  assert.equal(await sandbox.readTextFile({ path: '/workspace/notes/a.txt' }), 'one\ntwo\nthree\nfour\n');
  assert.equal(await sandbox.readTextFile({ path: 'notes/a.txt', startLine: 2, endLine: 3 }), 'two\nthree\n');
  assert.equal(await sandbox.readTextFile({ path: 'notes/a.txt', startLine: 3, endLine: 99 }), 'three\nfour\n');
  assert.equal((await sandbox.run({ command: 'cat notes/a.txt | wc -l' })).stdout, '4\n');

  // Outside the workspace, and read back through a stream.
  assert.match(String(await sandbox.readTextFile({ path: '/etc/os-release' })), /Debian/);
  await sandbox.writeBinaryFile({ path: '/tmp/deep/er/bytes.bin', content: new Uint8Array([0, 1, 2, 255]) });
  assert.deepEqual(await sandbox.readBinaryFile({ path: '/tmp/deep/er/bytes.bin' }), new Uint8Array([0, 1, 2, 255]));
  const stream = await sandbox.readFile({ path: '/tmp/deep/er/bytes.bin' });
  assert.ok(stream);
  assert.deepEqual(await bytesOf(stream), new Uint8Array([0, 1, 2, 255]));

  // Text in another encoding goes out and comes back as it was.
  await sandbox.writeTextFile({ path: 'utf16.txt', content: 'héllo ✓', encoding: 'utf-16le' });
  assert.deepEqual(await sandbox.readBinaryFile({ path: 'utf16.txt' }), new Uint8Array(Buffer.from('héllo ✓', 'utf16le')));
  assert.equal(await sandbox.readTextFile({ path: 'utf16.txt', encoding: 'utf-16le' }), 'héllo ✓');

  // stat follows links; listDirectory names them; deleteFile deletes the link, not its target.
  const made = await sandbox.run({ command: 'mkdir -p tree/sub && echo hi > tree/f && ln -s f tree/link && ln -s sub tree/dirlink && mkfifo tree/fifo' });
  assert.equal(made.exitCode, 0, made.stderr);
  assert.deepEqual(await sandbox.stat({ path: 'tree/f' }), { type: 'file', size: 3 });
  assert.deepEqual(await sandbox.stat({ path: 'tree/link' }), { type: 'file', size: 3 });
  assert.equal((await sandbox.stat({ path: 'tree/dirlink' }))?.type, 'directory');
  assert.equal((await sandbox.stat({ path: '/workspace/tree/fifo' }))?.type, 'other');
  assert.equal((await sandbox.stat({ path: '/dev/null' }))?.type, 'other');
  const listed = await sandbox.listDirectory({ path: 'tree' });
  assert.ok(listed);
  assert.deepEqual(
    [...listed].sort((a, b) => a.name.localeCompare(b.name)),
    [
      { name: 'dirlink', type: 'symlink' },
      { name: 'f', type: 'file' },
      { name: 'fifo', type: 'other' },
      { name: 'link', type: 'symlink' },
      { name: 'sub', type: 'directory' },
    ]
  );
  assert.equal(await sandbox.deleteFile({ path: 'tree/link' }), true);
  assert.equal(await sandbox.deleteFile({ path: 'tree/link' }), false);
  assert.equal(await sandbox.readTextFile({ path: 'tree/f' }), 'hi\n');
  assert.equal(await sandbox.deleteFile({ path: 'tree/dirlink' }), true);
  assert.equal((await sandbox.stat({ path: 'tree/sub' }))?.type, 'directory');

  // Missing paths are null (false for deleteFile), everywhere.
  for (const path of ['nope.txt', '/tmp/nope/x', '/etc/no-such-file']) {
    assert.equal(await sandbox.readFile({ path }), null);
    assert.equal(await sandbox.readBinaryFile({ path }), null);
    assert.equal(await sandbox.readTextFile({ path }), null);
    assert.equal(await sandbox.stat({ path }), null);
    assert.equal(await sandbox.listDirectory({ path }), null);
    assert.equal(await sandbox.deleteFile({ path }), false);
  }
});

test('file errors reject with the gateway’s reason and change nothing', { timeout: 60000 }, async () => {
  await sandbox.writeTextFile({ path: 'dir/keep.txt', content: 'kept' });
  await assert.rejects(rejecting(sandbox.writeTextFile({ path: 'dir', content: 'x' })), { status: 409, message: /Is a directory/ });
  await assert.rejects(rejecting(sandbox.readTextFile({ path: 'dir' })), { status: 409, message: /Is a directory/ });
  await assert.rejects(rejecting(sandbox.listDirectory({ path: 'dir/keep.txt' })), { status: 409, message: /Not a directory/ });
  await assert.rejects(rejecting(sandbox.deleteFile({ path: 'dir' })), { status: 409, message: /Is a directory/ });
  await sandbox.run({ command: 'mkdir empty' });
  await assert.rejects(rejecting(sandbox.deleteFile({ path: 'empty' })), { status: 409 });
  assert.equal((await sandbox.stat({ path: 'empty' }))?.type, 'directory');
  await assert.rejects(rejecting(sandbox.writeTextFile({ path: '/etc/x.conf', content: 'x' })), { status: 403, message: /Read-only file system/ });
  await assert.rejects(rejecting(sandbox.readTextFile({ path: 'dir/keep.txt', startLine: 0 })), { status: 400 });
  assert.equal(await sandbox.readTextFile({ path: 'dir/keep.txt' }), 'kept');
});

test('writeFile streams its body: 24 MiB made chunk by chunk, as the reader pulls', { timeout: 60000 }, async () => {
  const chunk = 64 * 1024;
  const chunks = 384;
  const hash = createHash('sha256');
  let made = 0;
  const content = new ReadableStream({
    pull(c) {
      if (made === chunks) return c.close();
      const bytes = new Uint8Array(chunk).fill(made % 251);
      hash.update(bytes);
      made++;
      c.enqueue(bytes);
    },
  });
  await sandbox.writeFile({ path: '/tmp/big/stream.bin', content });
  assert.equal(made, chunks);
  assert.deepEqual(await sandbox.stat({ path: '/tmp/big/stream.bin' }), { type: 'file', size: chunk * chunks });
  const sum = await sandbox.run({ command: 'sha256sum /tmp/big/stream.bin' });
  assert.equal(sum.stdout.split(' ')[0], hash.digest('hex'));
  const back = await sandbox.readFile({ path: '/tmp/big/stream.bin' });
  assert.ok(back);
  let total = 0;
  for await (const piece of /** @type {AsyncIterable<Uint8Array>} */ (/** @type {unknown} */ (back))) total += piece.byteLength;
  assert.equal(total, chunk * chunks);
});

test('spawn: stdin and stdout as streams, stderr apart, env and working directory', { timeout: 60000 }, async () => {
  const cat = await sandbox.spawn({ command: 'cat', stdin: true });
  assert.equal(typeof cat.pid, 'number');
  const writer = cat.stdin.getWriter();
  const reader = cat.stdout.getReader();
  // Each line comes back before the next is written: both ways stream.
  for (const line of ['first\n', 'second\n']) {
    await writer.write(enc.encode(line));
    assert.equal(await readUntil(reader, line), line);
  }
  await writer.close();
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
  assert.deepEqual(await cat.wait(), { exitCode: 0 });

  await sandbox.run({ command: 'mkdir -p sub' });
  const p = await sandbox.spawn({ command: 'echo "$GREETING"; pwd; echo oops >&2; exit 4', env: { GREETING: 'hello' }, workingDirectory: 'sub' });
  assert.equal('stdin' in p, false);
  const [out, err, exit] = await Promise.all([bytesOf(p.stdout), bytesOf(p.stderr), p.wait()]);
  assert.equal(dec.decode(out), 'hello\n/workspace/sub\n');
  assert.equal(dec.decode(err), 'oops\n');
  assert.deepEqual(exit, { exitCode: 4 });
});

test('spawn: kill is idempotent, a signal is 128 + n, abort kills and rejects wait()', { timeout: 60000 }, async () => {
  const sleeper = await sandbox.spawn({ command: 'sleep 60' });
  await Promise.all([sleeper.kill(), sleeper.kill()]);
  assert.deepEqual(await sleeper.wait(), { exitCode: 137 });
  await sleeper.kill();

  const term = await sandbox.spawn({ command: 'kill -TERM $$' });
  assert.deepEqual(await term.wait(), { exitCode: 143 });

  const controller = new AbortController();
  const aborted = await sandbox.spawn({ command: 'echo started; exec sleep 60', abortSignal: controller.signal });
  assert.equal(await readUntil(aborted.stdout.getReader(), 'started\n'), 'started\n');
  const reason = new Error('the user stopped it');
  controller.abort(reason);
  await assert.rejects(Promise.resolve(aborted.wait()), (e) => e === reason);
  // The process is gone from the sandbox, not just from this client.
  await waitFor('the aborted process to end', 10000, async () => {
    const list = (await api('GET', `api/sandboxes/${session.id}/processes`)).body;
    return list.find((/** @type {{pid: number, status: string}} */ q) => q.pid === aborted.pid)?.status !== 'running';
  });
  await assert.rejects(Promise.resolve(sandbox.spawn({ command: 'true', abortSignal: AbortSignal.abort(reason) })), (e) => e === reason);
});

test('run: exit code and output, maxOutputLength in UTF-16 code units with the full lengths', { timeout: 60000 }, async () => {
  assert.deepEqual(await sandbox.run({ command: 'echo out; echo err >&2; exit 3' }), { exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
  const code = `import sys; print('é' * 100 + '\\U0001F600'); sys.stderr.write('x' * 5000)`;
  const cut = await sandbox.run({ command: `python3 -c ${JSON.stringify(code)}`, maxOutputLength: 10 });
  assert.deepEqual(cut, { exitCode: 0, stdout: 'é'.repeat(10), stderr: 'x'.repeat(10), stdoutLength: 103, stderrLength: 5000 });
  const whole = await sandbox.run({ command: `python3 -c ${JSON.stringify(code)}`, maxOutputLength: 1000 });
  assert.equal(whole.stdout, 'é'.repeat(100) + '\u{1F600}\n');
  assert.equal(whole.stdoutLength, 103);
  // The command runs to its end, and its output past the limit is read and dropped.
  const long = await sandbox.run({ command: 'seq 1 200000; echo done > /tmp/ran-to-end', maxOutputLength: 6 });
  assert.equal(long.stdout, '1\n2\n3\n');
  assert.equal(long.stdoutLength, 1288895);
  assert.equal(await sandbox.readTextFile({ path: '/tmp/ran-to-end' }), 'done\n');
  assert.equal((await sandbox.run({ command: 'pwd', workingDirectory: '/tmp' })).stdout, '/tmp\n');
  await assert.rejects(rejecting(sandbox.run({ command: 'true', maxOutputLength: 0 })), { status: 400 });
  await assert.rejects(rejecting(sandbox.run({ command: 'sleep 60', abortSignal: AbortSignal.timeout(300) })), { name: 'TimeoutError' });
});

test('description, working directory and the restricted view', { timeout: 30000 }, async () => {
  assert.equal(session.defaultWorkingDirectory, '/workspace');
  assert.match(sandbox.description, /working directory is \/workspace/);
  assert.match(sandbox.description, /Network: none/);
  const bare = session.restricted();
  assert.equal('stop' in bare || 'setNetworkPolicy' in bare || 'getPortEndpoint' in bare, false);
  assert.equal(bare.description, sandbox.description);
  assert.equal((await bare.run({ command: 'cat notes/a.txt' })).stdout.split('\n')[0], 'one');
});

test('generateText runs anthropic bash_20250124 in the session; the model reads its output', { timeout: 60000 }, async () => {
  const { generateText, stepCountIs } = ai;
  /** @type {unknown} */
  let seen;
  const model = scriptedModel([
    callTool('bash', { command: 'echo from-bash; cat /etc/hostname; pwd' }),
    (/** @type {unknown[]} */ prompt) => {
      [seen] = lastToolOutputs(prompt);
      return answer('done');
    },
  ]);
  const result = await generateText({
    model,
    tools: { bash: anthropic.tools.bash_20250124() },
    experimental_sandbox: session,
    prompt: 'where am I?',
    stopWhen: stepCountIs(3),
  });
  const [r] = toolResults(result);
  assert.deepEqual(r.output, { exitCode: 0, stdout: 'from-bash\nsandbox\n/workspace\n', stderr: '' });
  assert.deepEqual(seen, { type: 'json', value: r.output });
  assert.equal(result.text, 'done');
});
