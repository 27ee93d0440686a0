// The Sandgate tools' debug printing, and examples/tui.mjs (runAgentTUI from
// @ai-sdk/tui with a ToolLoopAgent that has the Sandgate tools and a Sandgate
// sandbox session as its sandbox) driven in a real terminal: tmux (Debian's
// tmux package) runs it, send-keys types, capture-pane reads the screen. The
// example's scripted mock model runs each prompt as a runCode cell. By hand:
//   python3 ../e2e/run_with_gateway.py --sandboxed -- node --test $PWD/sandbox_tui.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ai, sdk, url, token, kernelName, api, packageDir, newSessionId, scriptedModel, callTool, answer, toolResults, waitFor } from './support.mjs';

const { generateText, stepCountIs } = ai;
const { createSandgateTools, Sandgate, InMemorySessionStore } = sdk;

test('debug prints each execution: the code or command, stdout, stderr, result, error, exit code', { timeout: 60000 }, async () => {
  const sessionId = newSessionId('debug');
  const sandgate = new Sandgate({ url, token, kernelName, store: new InMemorySessionStore(), sandbox: { ttl_s: 600 } });
  /** @type {string[]} */
  const printed = [];
  const tools = createSandgateTools({ sandgate, sessionId, debug: (text) => printed.push(text) });
  try {
    const model = scriptedModel([
      callTool('runCode', { code: 'print("hi")\n6 * 7' }),
      callTool('runCode', { code: '1 / 0' }),
      callTool('runShell', { command: 'echo out; echo err >&2; exit 3' }),
      answer('done'),
    ]);
    toolResults(await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(5) }));
    assert.equal(printed.length, 6);
    assert.match(printed[0], /^\[sandgate\] runCode python \(call-\d+\) runs\n  code:\n    print\("hi"\)\n    6 \* 7$/);
    assert.match(printed[1], /runCode python \(call-\d+\) ended\n  stdout:\n    hi\n  result:\n    42$/);
    assert.match(printed[3], /ended\n  error:\n    ZeroDivisionError: division by zero\n/);
    assert.match(printed[4], /^\[sandgate\] runShell \(call-\d+\) runs\n  command:\n    echo out; echo err >&2; exit 3$/);
    assert.equal(printed[5].replace(/\(call-\d+\)/, '(call)'), '[sandgate] runShell (call) ended\n  stdout:\n    out\n  stderr:\n    err\n  exit code:\n    3');

    // debug: true prints the same to the terminal.
    const logged = [];
    const log = console.log;
    console.log = (...args) => logged.push(args.join(' '));
    try {
      const loud = createSandgateTools({ sandgate, sessionId, debug: true });
      await generateText({ model: scriptedModel([callTool('runShell', { command: 'echo loud' }), answer('ok')]), tools: loud, prompt: 'go', stopWhen: stepCountIs(3) });
    } finally {
      console.log = log;
    }
    assert.equal(logged.length, 2);
    assert.match(logged[1], /stdout:\n    loud/);
  } finally {
    await sandgate.endSession(sessionId);
  }
});

/** Runs tmux on a server of its own (-S: a socket in the test's directory), so the test touches no other tmux session. */
function tmux(socket, ...args) {
  return execFileSync('tmux', ['-S', socket, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

test('runAgentTUI with the Sandgate tools and session: a cell typed in a real terminal runs, its tool card shows', { timeout: 60000 }, async () => {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'ignore' });
  } catch {
    assert.fail('tmux is missing: apt-get install tmux');
  }
  const work = mkdtempSync(join(tmpdir(), 'sandgate-tui-'));
  const socket = join(work, 'tmux.sock');
  const exitFile = join(work, 'exit');
  const sessionId = newSessionId('tui');
  const screen = () => tmux(socket, 'capture-pane', '-p', '-t', 'tui');
  const see = (what, re) => waitFor(`${what} on the screen`, 30000, () => re.test(screen()));
  try {
    tmux(socket, 'new-session', '-d', '-s', 'tui', '-x', '120', '-y', '40',
      '-e', `SANDGATE_URL=${url}`, '-e', `SANDGATE_TOKEN=${token}`, '-e', `SANDGATE_SESSION_ID=${sessionId}`,
      '-c', packageDir, `node examples/tui.mjs; echo $? > ${exitFile}`);
    await see('the prompt', /Waiting for input/);
    const [sandbox] = (await api('GET', `api/sandboxes?metadata.harness_session_id=${sessionId}`)).body;
    assert.ok(sandbox, 'the example made its session');

    tmux(socket, 'send-keys', '-t', 'tui', '-l', "open('from-tui.txt', 'w').write('written by runCode'); 6 * 7");
    tmux(socket, 'send-keys', '-t', 'tui', 'Enter');
    await see('the tool card and the answer', /Tool · runCode[\s\S]*done[\s\S]*The result is 42\./);
    // The tools ran in the session's sandbox.
    const file = await fetch(`${url}api/sandboxes/${sandbox.id}/fs?path=/workspace/from-tui.txt`, { headers: { Authorization: `token ${token}` } });
    assert.equal(await file.text(), 'written by runCode');

    tmux(socket, 'send-keys', '-t', 'tui', '-l', '!echo from-the-shell');
    tmux(socket, 'send-keys', '-t', 'tui', 'Enter');
    await see('the shell card and its output', /Tool · runShell[\s\S]*The command exited with 0: from-the-shell/);

    // Esc ends it; the example deletes its sandbox.
    tmux(socket, 'send-keys', '-t', 'tui', 'Escape');
    const status = await waitFor('the example to exit', 20000, () => {
      try {
        return readFileSync(exitFile, 'utf8').trim() || false;
      } catch {
        return false;
      }
    });
    assert.equal(status, '0');
    assert.equal((await api('GET', `api/sandboxes/${sandbox.id}`)).body.reason, 'deleted');
  } finally {
    try {
      tmux(socket, 'kill-server');
    } catch {
      // it ended with its last session
    }
    rmSync(work, { recursive: true, force: true });
  }
});
