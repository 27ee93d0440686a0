// Headless Chromium (Debian's /usr/bin/chromium) for the Notebook tests, in
// a profile of its own that close() removes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

export async function launchChromium() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandgate-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
    viewport: { width: 1200, height: 900 },
    timeout: 60000,
  });
  return {
    context,
    close: async () => {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

// Launches Chromium before the file's tests and closes it after them;
// returns a function that gives its browser context.
export function chromiumForTests() {
  let browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    if (browser) await browser.close();
  });
  return () => browser.context;
}
