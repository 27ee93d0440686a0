// @jupyterlab/services (the JupyterLab client library) against a real
// sandgate with sandboxed kernels, on the JavaScript and TypeScript kernels
// (sandgate-javascript): the kernelspecs, start, execute, a PNG from a
// Buffer whose bytes arrive exactly, interrupt, restart and shutdown. Run by
// `run_with_gateway.py --sandboxed`, which provides SANDGATE_URL,
// SANDGATE_WS_URL and SANDGATE_TOKEN.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import services from '@jupyterlab/services';

import {
  assertShutdownRemoves, execute, interruptedReply, ofType, resultText, settings, startKernel, stopKernel,
  streamText, withTimeout,
} from './lab_client.mjs';
import { makePng } from './png.mjs';

const { KernelSpecManager } = services;

test('the javascript and typescript kernelspecs are listed with language and logos', { timeout: 30000 }, async () => {
  const specs = new KernelSpecManager({ serverSettings: settings });
  await withTimeout(specs.ready, 20000, 'kernelspecs');
  for (const [name, language] of [['javascript', 'javascript'], ['typescript', 'typescript']]) {
    const spec = specs.specs.kernelspecs[name];
    assert.ok(spec, `${name} kernelspec`);
    assert.equal(spec.language, language);
    assert.match(spec.resources['logo-64x64'], new RegExp(`kernelspecs/${name}/logo-64x64\\.png$`));
  }
  specs.dispose();
});

for (const name of ['javascript', 'typescript']) {
  describe(`kernel ${name}`, () => {
    let manager;
    let kernel;

    before(async () => {
      let info;
      ({ manager, kernel, info } = await startKernel(name));
      assert.equal(info.language_info.name, name);
      assert.equal(info.implementation, 'sandgate-javascript');
    });

    after(() => stopKernel(manager, kernel));

    test('execute gives a stream, a result and an ok reply', { timeout: 90000 }, async () => {
      assert.equal(kernel.connectionStatus, 'connected');
      const { reply, iopub } = await execute(kernel, "console.log('hello from lab', process.env.HOME);\n6 * 7", 90000);
      assert.equal(reply.content.status, 'ok');
      assert.equal(streamText(iopub), 'hello from lab /workspace\n');
      assert.equal(resultText(iopub), '42');
      assert.deepEqual(ofType(iopub, 'status').map((m) => m.content.execution_state), ['busy', 'idle']);
    });

    test('display() of a PNG Buffer arrives as exactly its bytes', { timeout: 60000 }, async () => {
      const png = makePng(48, 30);
      const { reply, iopub } = await execute(
        kernel,
        `const png = Buffer.from('${png.toString('base64')}', 'base64');\ndisplay(png);\ndisplay.png(png);`
      );
      assert.equal(reply.content.status, 'ok');
      const shown = ofType(iopub, 'display_data');
      assert.equal(shown.length, 2);
      for (const m of shown) {
        assert.equal(m.content.data['image/png'], png.toString('base64'));
        assert.ok(Buffer.from(m.content.data['image/png'], 'base64').equals(png), 'the same bytes');
      }
    });

    test('interrupt stops a busy loop and keeps state', { timeout: 60000 }, async () => {
      await execute(kernel, 'let kept = 41;');
      const reply = await interruptedReply(kernel, "console.log('spinning');\nwhile (true) {}");
      assert.equal(reply.content.status, 'error');
      assert.equal(reply.content.ename, 'Interrupted');
      assert.equal(resultText((await execute(kernel, 'kept + 1')).iopub), '42');
    });

    test('restart gives a fresh Node', { timeout: 90000 }, async () => {
      await execute(kernel, "let secret = 'gone after restart';");
      await withTimeout(kernel.restart(), 60000, 'restart');
      const { iopub } = await execute(kernel, "'secret' in globalThis");
      assert.equal(resultText(iopub), 'false');
    });

    test('shutdown removes the kernel', { timeout: 30000 }, () => assertShutdownRemoves(manager, kernel));
  });
}
