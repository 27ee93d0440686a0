// Notebook 6 in headless Chromium, with its kernels behind sandgate: open a
// notebook with a matplotlib cell, run it, wait for the PNG in the output
// area and keep a screenshot. Run by run_with_notebook.py, which provides
// NOTEBOOK_URL, NOTEBOOK_TOKEN, NOTEBOOK_DIR, SANDGATE_ARTIFACTS and
// SANDGATE_KERNELS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { chromiumForTests } from './chromium.mjs';

const notebookUrl = process.env.NOTEBOOK_URL;
const token = process.env.NOTEBOOK_TOKEN;
const root = process.env.NOTEBOOK_DIR;
const artifacts = process.env.SANDGATE_ARTIFACTS;
const kernelNames = (process.env.SANDGATE_KERNELS || 'python3').split(',');
assert.ok(notebookUrl && token && root && artifacts, 'run me through run_with_notebook.py');

// ipykernel needs the magic; sandgate-python shows figures inline by itself.
const plotCell = {
  python3: "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2, 4], 'o-')\nplt.title('sandgate')\nplt.show()",
  python: "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2, 4], 'o-')\nplt.title('sandgate')\nplt.show()",
};

// A notebook of one code cell on `kernel`.
function writeNotebook(file, kernel, source) {
  const nb = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: kernel, display_name: kernel, language: 'python' },
      language_info: { name: 'python' },
    },
    cells: [
      { cell_type: 'code', id: 'cell', metadata: {}, execution_count: null, outputs: [], source },
    ],
  };
  fs.writeFileSync(path.join(root, file), JSON.stringify(nb, null, 1));
}

// Opens the notebook in `page` and waits until its kernel is connected and
// then until `ready` (a page function, if given) holds.
async function openNotebook(page, file, ready) {
  await page.goto(`${notebookUrl}notebooks/${file}?token=${token}`, { timeout: 60000 });
  await page.waitForFunction(
    () => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected(),
    null,
    { timeout: 120000 }
  );
  if (ready) await page.waitForFunction(ready, null, { timeout: 120000 });
}

const browserContext = chromiumForTests();

for (const kernel of kernelNames.filter((k) => plotCell[k])) {
  test(`a matplotlib cell on ${kernel} shows its PNG in Notebook`, { timeout: 240000 }, async () => {
    const file = `plot-${kernel}.ipynb`;
    writeNotebook(file, kernel, plotCell[kernel]);
    const page = await browserContext().newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    try {
      await openNotebook(page, file);
      await page.evaluate(() => Jupyter.notebook.execute_all_cells());
      const img = page.locator('.output_area img[src^="data:image/png"]');
      await img.first().waitFor({ state: 'visible', timeout: 120000 });
      const size = await img.first().evaluate((el) => [el.naturalWidth, el.naturalHeight]);
      assert.ok(size[0] > 100 && size[1] > 100, `decoded image size ${size}`);
      const errors = await page.locator('.output_area .output_error').count();
      assert.equal(errors, 0, 'the cell produced an error');
      fs.mkdirSync(artifacts, { recursive: true });
      const shot = path.join(artifacts, kernel === 'python3' ? 'notebook.png' : `notebook-${kernel}.png`);
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok(fs.statSync(shot).size > 10000, 'screenshot is written');
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
  });
}

// Debian's ipywidgets 6 and its Notebook extension (jupyter-js-widgets 2.1):
// the kernel's widget comms travel through Notebook and sandgate to the
// page's widget manager and back. The extension cannot draw the slider in
// Debian's Notebook 6.4, with or without sandgate: it displays views only
// into a cell's `widgetarea`, which Notebook 5 removed (codecell.js has
// none), so the test checks the models the page holds, not a drawn view.
const sliderValue = (page) => page.evaluate(async () => {
  const manager = Jupyter.WidgetManager._managers[0];
  const models = await Promise.all(Object.values(manager._models));
  const slider = models.find((m) => m.get('_model_name') === 'IntSliderModel' && m.get('description') === 'sandgate');
  return slider === undefined ? null : slider.get('value');
});

// Polls the page's slider model until it holds `value` (null: no model yet).
async function waitForSlider(page, value, ms) {
  const deadline = Date.now() + ms;
  let seen = null;
  while (Date.now() < deadline) {
    seen = await sliderValue(page);
    if (seen === value) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the page's slider model is ${seen}, not ${value}, after ${ms} ms`);
}

for (const kernel of kernelNames) {
  test(`an IntSlider on ${kernel} syncs both ways with Notebook's widget manager`, { timeout: 240000 }, async () => {
    const file = `widget-${kernel}.ipynb`;
    writeNotebook(file, kernel,
      "import ipywidgets\nslider = ipywidgets.IntSlider(value=3, min=0, max=10, description='sandgate')\nslider");
    const page = await browserContext().newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    try {
      await openNotebook(page, file, () => Jupyter.WidgetManager && Jupyter.WidgetManager._managers.length > 0);
      await page.evaluate(() => Jupyter.notebook.execute_all_cells());
      // The kernel's comm_open made the model in the page, with the kernel's state.
      await waitForSlider(page, 3, 120000);

      // The page changes the model (as a drag does): the kernel sees it.
      await page.evaluate(async () => {
        const models = await Promise.all(Object.values(Jupyter.WidgetManager._managers[0]._models));
        const slider = models.find((m) => m.get('description') === 'sandgate');
        slider.set('value', 7);
        slider.save_changes();
      });
      const printed = await page.evaluate(() => new Promise((resolve, reject) => {
        // Comm messages and executes share the shell channel, in order.
        Jupyter.notebook.kernel.execute('print(slider.value)', {
          iopub: { output: (msg) => msg.msg_type === 'stream' && resolve(msg.content.text) },
        });
        setTimeout(() => reject(new Error('no output from print(slider.value)')), 20000);
      }));
      assert.equal(printed.trim(), '7');

      // The kernel changes it: the page's model follows.
      await page.evaluate(() => Jupyter.notebook.kernel.execute('slider.value = 9'));
      await waitForSlider(page, 9, 20000);
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
  });
}
