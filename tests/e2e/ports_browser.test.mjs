// Ports of sandboxes in headless Chromium (playwright-core): a page that
// `python3 -m http.server` serves in a sandbox, opened through the host-name
// route ({port}-{sandbox id}.localhost, which Chromium resolves to loopback)
// with a signed URL, then its links and a script's fetch and WebSocket
// working with the cookie the URL was traded for; the same page by path; and
// a second sandbox's port not reachable with the first one's URL or cookie.
// Run by `run_with_gateway.py --sandboxed` (SANDGATE_URL, SANDGATE_TOKEN).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { chromiumForTests } from './chromium.mjs';

const base = process.env.SANDGATE_URL.replace(/\/?$/, '/');
const token = process.env.SANDGATE_TOKEN;
const gatewayPort = new URL(base).port;
const browser = chromiumForTests();

// A server for the sandbox: static files, and a WebSocket on /echo that answers each text message reversed.
const server = `
import asyncio, base64, hashlib, http, os, sys
os.chdir("/workspace/site")
async def handle(reader, writer):
    head = (await reader.readuntil(b"\\r\\n\\r\\n")).decode()
    lines = head.split("\\r\\n")
    path = lines[0].split()[1].split("?")[0]
    headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    if path == "/echo":
        accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        writer.write(("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + "\\r\\n\\r\\n").encode())
        while True:
            b0, b1 = await reader.readexactly(2)
            if b0 & 0x0F == 8:
                break
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(await reader.readexactly(2), "big")
            mask = await reader.readexactly(4)
            text = bytes(b ^ mask[i % 4] for i, b in enumerate(await reader.readexactly(n))).decode()[::-1].encode()
            writer.write(bytes([0x81, len(text)]) + text)
            await writer.drain()
        writer.close()
        return
    name = "index.html" if path == "/" else path.lstrip("/")
    try:
        body = open(name, "rb").read()
        status, kind = "200 OK", "text/html" if name.endswith(".html") else "text/plain"
    except OSError:
        body, status, kind = b"missing", "404 Not Found", "text/plain"
    writer.write(f"HTTP/1.1 {status}\\r\\nContent-Type: {kind}\\r\\nContent-Length: {len(body)}\\r\\nConnection: close\\r\\n\\r\\n".encode() + body)
    await writer.drain()
    writer.close()
async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    await srv.serve_forever()
asyncio.run(main())
`;

const page = `<!doctype html><title>sandbox page</title>
<h1 id="title">served from SANDBOX</h1>
<a id="link" href="/other.html">absolute link</a>
<pre id="fetched"></pre><pre id="ws"></pre>
<script>
fetch('/data.txt').then((r) => r.text()).then((t) => { document.getElementById('fetched').textContent = t; });
const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/echo');
ws.onopen = () => ws.send('stressed');
ws.onmessage = (e) => { document.getElementById('ws').textContent = e.data; };
</script>`;

async function api(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `token ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

async function sandboxServing(label, port) {
  const sb = await api('POST', 'api/sandboxes', { ttl_s: 900 });
  assert.equal(sb.status, 201);
  const id = sb.json.id;
  for (const [name, content] of [['site/index.html', page.replace('SANDBOX', label)], ['site/other.html',
    `<h1 id="title">other page of ${label}</h1>`], ['site/data.txt', `data of ${label}`], ['server.py', server]]) {
    const put = await fetch(`${base}api/sandboxes/${id}/files/${name}`, {
      method: 'PUT', headers: { Authorization: `token ${token}` }, body: content,
    });
    assert.equal(put.status, 201, name);
  }
  const p = await api('POST', `api/sandboxes/${id}/processes`, { cmd: ['python3', 'server.py', String(port)] });
  assert.equal(p.status, 201, JSON.stringify(p.json));
  const deadline = Date.now() + 30000;
  for (;;) {
    const ports = await api('GET', `api/sandboxes/${id}/ports`);
    if (ports.json.some((x) => x.port === port)) break;
    assert.ok(Date.now() < deadline, 'the server to listen');
    await new Promise((r) => setTimeout(r, 100));
  }
  return id;
}

let first;
let second;

before(async () => {
  first = await sandboxServing('first', 3000);
  second = await sandboxServing('second', 3000);
});

after(async () => {
  for (const id of [first, second]) if (id) await api('DELETE', `api/sandboxes/${id}`);
});

test('a signed URL opens the page by host name; its links, fetch and WebSocket work', { timeout: 120000 }, async () => {
  const url = await api('POST', `api/sandboxes/${first}/port-urls`, { port: 3000, route: 'host', ttl_s: 300 });
  assert.equal(url.status, 201);
  assert.match(url.json.url, new RegExp(`^http://3000-${first}\\.localhost:${gatewayPort}/\\?sandgate_port_token=`));
  const tab = await browser().newPage();
  await tab.goto(url.json.url);
  assert.equal(await tab.textContent('#title'), 'served from first');
  assert.equal(new URL(tab.url()).search, '', 'the token is gone from the address bar');
  await tab.waitForFunction(() => document.getElementById('fetched').textContent !== '');
  assert.equal(await tab.textContent('#fetched'), 'data of first');
  await tab.waitForFunction(() => document.getElementById('ws').textContent !== '');
  assert.equal(await tab.textContent('#ws'), 'desserts');
  await tab.click('#link');
  await tab.waitForSelector('text=other page of first');
  const cookies = await tab.context().cookies(`http://3000-${first}.localhost:${gatewayPort}/`);
  const cookie = cookies.find((c) => c.name === 'sandgate_port');
  assert.ok(cookie && cookie.httpOnly, 'an HttpOnly cookie of that host');
  assert.equal(cookie.domain, `3000-${first}.localhost`);
  await tab.close();
});

test('the same page by path, with a signed URL of the path route', { timeout: 60000 }, async () => {
  const url = await api('POST', `api/sandboxes/${first}/port-urls`, { port: 3000, route: 'path' });
  const tab = await browser().newPage();
  await tab.goto(url.json.url);
  assert.equal(await tab.textContent('#title'), 'served from first');
  assert.ok(tab.url().endsWith(`/api/sandboxes/${first}/ports/3000/`), tab.url());
  await tab.close();
});

test("a second sandbox's port is not reachable with the first one's URL or cookie", { timeout: 60000 }, async () => {
  const url = await api('POST', `api/sandboxes/${first}/port-urls`, { port: 3000, route: 'host' });
  const token1 = url.json.token;
  const tab = await browser().newPage();
  const other = `http://3000-${second}.localhost:${gatewayPort}/`;
  let res = await tab.goto(`${other}?sandgate_port_token=${token1}`);
  assert.equal(res.status(), 401);
  // The first sandbox's cookie is that host's alone: the second's host never gets it.
  await tab.goto(url.json.url);
  res = await tab.goto(other);
  assert.equal(res.status(), 401);
  assert.doesNotMatch(await tab.content(), /second/);
  await tab.close();
});
