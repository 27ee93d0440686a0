// Notebook 6 in headless Chromium, its kernels behind a sandgate that runs
// them sandboxed: a new JavaScript notebook made from Notebook's "New" menu,
// a cell that displays a PNG from a Buffer, and the page's <img> holding
// exactly those bytes at their size. The screenshot lands in
// <build>/tests/artifacts/notebook-javascript.png. Run by
// `run_with_notebook.py --sandboxed`, which provides NOTEBOOK_URL,
// NOTEBOOK_TOKEN and SANDGATE_ARTIFACTS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { chromiumForTests } from './chromium.mjs';
import { makePng } from './png.mjs';

const notebookUrl = process.env.NOTEBOOK_URL;
const token = process.env.NOTEBOOK_TOKEN;
const artifacts = process.env.SANDGATE_ARTIFACTS;
assert.ok(notebookUrl && token && artifacts, 'run me through run_with_notebook.py');

const browserContext = chromiumForTests();

test('a new JavaScript notebook shows the PNG a cell displays', { timeout: 300000 }, async () => {
  const png = makePng(160, 90);
  const tree = await browserContext().newPage();
  const problems = [];
  tree.on('pageerror', (e) => problems.push(String(e)));
  let page;
  try {
    // Notebook lists the gateway's kernelspecs in its "New" menu.
    await tree.goto(`${notebookUrl}tree?token=${token}`, { timeout: 60000 });
    await tree.locator('#new-dropdown-button').click();
    const item = tree.locator('#kernel-javascript a');
    await item.waitFor({ state: 'visible', timeout: 60000 });
    assert.equal((await item.textContent()).trim(), 'JavaScript (Sandgate)');
    [page] = await Promise.all([browserContext().waitForEvent('page', { timeout: 60000 }), item.click()]);
    page.on('pageerror', (e) => problems.push(String(e)));

    await page.waitForFunction(
      () => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected(),
      null,
      { timeout: 120000 }
    );
    const kernel = await page.evaluate(() => [Jupyter.notebook.kernel.name, Jupyter.notebook.metadata.kernelspec.name]);
    assert.deepEqual(kernel, ['javascript', 'javascript']);

    await page.evaluate((code) => {
      const cell = Jupyter.notebook.get_cell(0);
      cell.set_text(code);
      cell.execute();
    }, `const png = Buffer.from('${png.toString('base64')}', 'base64');\ndisplay(png);`);
    const img = page.locator('.output_area img[src^="data:image/png"]');
    await img.first().waitFor({ state: 'visible', timeout: 120000 });
    const [width, height, src] = await img.first().evaluate((el) => [el.naturalWidth, el.naturalHeight, el.src]);
    assert.deepEqual([width, height], [160, 90], 'the decoded image has the PNG size');
    assert.equal(src, `data:image/png;base64,${png.toString('base64')}`, 'the page holds exactly the bytes');
    assert.equal(await page.locator('.output_area .output_error').count(), 0, 'the cell produced an error');

    fs.mkdirSync(artifacts, { recursive: true });
    const shot = path.join(artifacts, 'notebook-javascript.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(fs.statSync(shot).size > 10000, 'screenshot is written');
    assert.deepEqual(problems, []);
  } finally {
    if (page) {
      // Shut the kernel down with the notebook, as its File menu does.
      await page.evaluate(() => Jupyter.notebook.kernel.kill()).catch(() => {});
      await page.close();
    }
    await tree.close();
  }
});
