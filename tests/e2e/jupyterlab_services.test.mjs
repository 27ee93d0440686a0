// @jupyterlab/services (the JupyterLab client library) against a real
// sandgate: kernelspecs, start, execute, interrupt, restart, sessions and
// shutdown. Run by run_with_gateway.py, which provides SANDGATE_URL,
// SANDGATE_WS_URL, SANDGATE_TOKEN and SANDGATE_KERNELS.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import services from '@jupyterlab/services';

import {
  assertShutdownRemoves, baseUrl, execute, interruptedReply, resultText, settings, startKernel, stopKernel,
  streamText, token, withTimeout,
} from './lab_client.mjs';

const { KernelManager, KernelSpecManager, SessionManager } = services;

const kernelNames = (process.env.SANDGATE_KERNELS || 'python3').split(',');

test('kernelspecs are listed with the default', { timeout: 30000 }, async () => {
  const specs = new KernelSpecManager({ serverSettings: settings });
  await withTimeout(specs.ready, 20000, 'kernelspecs');
  await specs.refreshSpecs();
  assert.ok(specs.specs.kernelspecs.python3, 'python3 kernelspec');
  assert.ok(specs.specs.kernelspecs[specs.specs.default], 'the default kernelspec exists');
  assert.equal(specs.specs.kernelspecs.python3.language, 'python');
  specs.dispose();
});

for (const name of kernelNames) {
  describe(`kernel ${name}`, () => {
    let manager;
    let kernel;

    before(async () => {
      let info;
      ({ manager, kernel, info } = await startKernel(name));
      assert.equal(info.language_info.name, 'python');
    });

    after(() => stopKernel(manager, kernel));

    test('execute gives a stream, a result and an ok reply', { timeout: 60000 }, async () => {
      assert.equal(kernel.connectionStatus, 'connected');
      const { reply, iopub } = await execute(kernel, "print('hello from lab')\n6 * 7");
      assert.equal(reply.content.status, 'ok');
      assert.equal(streamText(iopub), 'hello from lab\n');
      assert.equal(resultText(iopub), '42');
      const states = iopub.filter((m) => m.header.msg_type === 'status').map((m) => m.content.execution_state);
      assert.deepEqual(states, ['busy', 'idle']);
    });

    test('interrupt stops a long sleep and keeps state', { timeout: 60000 }, async () => {
      await execute(kernel, 'x = 41');
      const reply = await interruptedReply(kernel, "import time\nprint('sleeping', flush=True)\ntime.sleep(100)");
      assert.equal(reply.content.status, 'error');
      assert.equal(reply.content.ename, 'KeyboardInterrupt');
      const { iopub } = await execute(kernel, 'x + 1');
      assert.equal(resultText(iopub), '42');
    });

    test('restart loses state and the kernel stays usable', { timeout: 90000 }, async () => {
      await execute(kernel, "secret = 'gone after restart'");
      await withTimeout(kernel.restart(), 60000, 'restart');
      const { reply } = await execute(kernel, 'secret').catch((e) => ({ reply: e }));
      assert.equal(reply.content.status, 'error');
      assert.equal(reply.content.ename, 'NameError');
      const { iopub } = await execute(kernel, '2 + 2');
      assert.equal(resultText(iopub), '4');
    });

    test('a comm the kernel opens carries messages both ways and closes', { timeout: 60000 }, async () => {
      const received = [];
      let opened;
      const openedComm = new Promise((resolve) => (opened = resolve));
      kernel.registerCommTarget(`sandgate.lab.${name}`, (comm, msg) => {
        comm.onMsg = (m) => received.push(m.content.data);
        opened({ comm, data: msg.content.data });
      });
      await execute(
        kernel,
        'from ipykernel.comm import Comm\n' +
          'got = []\n' +
          `lab = Comm(target_name='sandgate.lab.${name}', data={'hello': 'lab'})\n` +
          "lab.on_msg(lambda m: (got.append(m['content']['data']), lab.send({'echo': m['content']['data']})))"
      );
      const { comm, data } = await withTimeout(openedComm, 20000, 'the comm_open');
      assert.deepEqual(data, { hello: 'lab' });

      const info = await withTimeout(kernel.requestCommInfo({ target_name: `sandgate.lab.${name}` }), 10000, 'comm_info');
      assert.deepEqual(Object.keys(info.content.comms), [comm.commId]);

      await withTimeout(comm.send({ n: 1 }).done, 10000, 'the comm_msg to be handled');
      assert.deepEqual(received, [{ echo: { n: 1 } }]);
      assert.equal(resultText((await execute(kernel, 'got')).iopub), "[{'n': 1}]");

      let closed;
      const closing = new Promise((resolve) => (closed = resolve));
      comm.onClose = (m) => closed(m.content.data);
      await execute(kernel, "lab.close({'bye': 1})");
      assert.deepEqual(await withTimeout(closing, 10000, 'the comm_close'), { bye: 1 });
      assert.ok(comm.isDisposed);
    });

    test('a comm the frontend opens reaches the kernel target and lives on', { timeout: 60000 }, async () => {
      await execute(
        kernel,
        'events = []\n' +
          'def opened(comm, msg):\n' +
          "    events.append(msg['content']['data'])\n" +
          "    comm.on_msg(lambda m: comm.send({'doubled': m['content']['data']['x'] * 2}))\n" +
          "    comm.on_close(lambda m: events.append('closed'))\n" +
          "get_ipython().kernel.comm_manager.register_target('sandgate.kernel_side', opened)"
      );
      const comm = kernel.createComm('sandgate.kernel_side');
      const replies = [];
      comm.onMsg = (m) => replies.push(m.content.data);
      await withTimeout(comm.open({ from: 'frontend' }).done, 10000, 'the comm_open to be handled');
      await withTimeout(comm.send({ x: 21 }).done, 10000, 'the comm_msg to be handled');
      assert.deepEqual(replies, [{ doubled: 42 }]);
      await withTimeout(comm.close().done, 10000, 'the comm_close to be handled');
      assert.equal(resultText((await execute(kernel, 'events')).iopub), "[{'from': 'frontend'}, 'closed']");
    });

    test("an IntSlider's state syncs both ways", { timeout: 60000 }, async () => {
      const models = new Map();
      kernel.registerCommTarget('jupyter.widget', (comm, msg) => {
        const model = { comm, state: { ...msg.content.data }, updates: [] };
        comm.onMsg = (m) => {
          if (m.content.data.method === 'update') {
            Object.assign(model.state, m.content.data.state);
            model.updates.push(m.content.data.state);
          }
        };
        models.set(comm.commId, model);
      });
      const { reply, iopub } = await execute(
        kernel,
        'import ipywidgets\nslider = ipywidgets.IntSlider(value=3, min=0, max=10)\nslider'
      );
      assert.equal(reply.content.status, 'ok');
      const view = iopub.find(
        (m) => m.content.data && m.content.data['application/vnd.jupyter.widget-view+json']
      );
      assert.ok(view, 'a widget view bundle');
      const modelId = view.content.data['application/vnd.jupyter.widget-view+json'].model_id;
      const model = models.get(modelId);
      assert.ok(model, 'the slider model arrived as a comm');
      assert.equal(model.state._model_name, 'IntSliderModel');
      assert.equal(model.state.value, 3);

      // The user drags it to 7.
      await withTimeout(
        model.comm.send({ method: 'backbone', sync_data: { value: 7 } }).done,
        10000,
        'the slider change to be handled'
      );
      assert.equal(resultText((await execute(kernel, 'slider.value')).iopub), '7');

      // A cell sets it to 9.
      await execute(kernel, 'slider.value = 9');
      assert.equal(model.state.value, 9);
      assert.deepEqual(model.updates.at(-1), { value: 9 });
      await execute(kernel, 'slider.close()');
    });

    test('the kernel is listed while running', { timeout: 30000 }, async () => {
      await manager.refreshRunning();
      const ids = [...manager.running()].map((k) => k.id);
      assert.ok(ids.includes(kernel.id), 'running kernels include ours');
    });

    test('shutdown removes the kernel', { timeout: 30000 }, () => assertShutdownRemoves(manager, kernel));
  });
}

test('a session starts a kernel, runs code and shuts down with it', { timeout: 120000 }, async () => {
  const kernels = new KernelManager({ serverSettings: settings });
  const sessions = new SessionManager({ kernelManager: kernels, serverSettings: settings });
  await withTimeout(sessions.ready, 20000, 'the session manager');
  const session = await withTimeout(
    sessions.startNew({ path: 'e2e/lab.ipynb', type: 'notebook', name: 'lab.ipynb', kernel: { name: 'python3' } }),
    90000,
    'a session'
  );
  try {
    assert.equal(session.path, 'e2e/lab.ipynb');
    const { reply, iopub } = await execute(session.kernel, "print('from a session')");
    assert.equal(reply.content.status, 'ok');
    assert.equal(streamText(iopub), 'from a session\n');
    await session.setPath('e2e/renamed.ipynb');
    const found = await sessions.findByPath('e2e/renamed.ipynb');
    assert.equal(found.id, session.id);
  } finally {
    const kernelId = session.kernel.id;
    await withTimeout(session.shutdown(), 30000, 'session shutdown');
    const r = await fetch(`${baseUrl}api/kernels/${kernelId}`, { headers: { Authorization: `token ${token}` } });
    assert.equal(r.status, 404);
    sessions.dispose();
    kernels.dispose();
  }
});
