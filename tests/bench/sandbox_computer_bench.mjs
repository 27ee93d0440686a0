// A sandbox as a computer, measured side by side with its floor in one run
// (docs/benchmarks.md, "Processes and ports"): spawn to first output byte
// (vs spawning the same program on the host), process output throughput over
// the attach WebSocket (vs the same program's pipe on the host) with the
// gateway's memory, a request through the port proxy (vs the same request
// made from inside the sandbox), and 200 WebSockets through the proxy at once.
// Run by tests/bench/sandbox_computer_bench.py (which starts the gateway).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../e2e/package.json', import.meta.url));
const WebSocket = require('ws');

const base = process.env.SANDGATE_URL.replace(/\/?$/, '/');
const token = process.env.SANDGATE_TOKEN;
const gatewayPid = Number(process.env.SANDGATE_GATEWAY_PID);
const gatewayPort = new URL(base).port;
const short = process.argv.includes('--short');
const auth = { Authorization: `token ${token}` };

const rssKib = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const ms = (ns) => Number(ns) / 1e6;

async function api(method, path, body) {
  const res = await fetch(base + path, {
    method, headers: { ...auth, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

function attach(sid, pid) {
  return new WebSocket(`${base.replace(/^http/, 'ws')}api/sandboxes/${sid}/processes/${pid}/attach`, { headers: auth });
}

async function waitListening(sid, port) {
  for (const deadline = Date.now() + 30000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50)))
    if ((await api('GET', `api/sandboxes/${sid}/ports`)).some((p) => p.port === port)) return;
  throw new Error(`nothing listens on ${port}`);
}

// --- spawn to first byte ----------------------------------------------------------------------
async function firstByteInSandbox(sid) {
  const start = process.hrtime.bigint();
  const p = await api('POST', `api/sandboxes/${sid}/processes`, { cmd: ['printf', 'x'] });
  const ws = attach(sid, p.id);
  await new Promise((resolve, reject) => {
    ws.on('message', (data, binary) => {
      if (binary && data[0] === 1 && data.length > 1) resolve();
    });
    ws.on('error', reject);
  });
  const took = process.hrtime.bigint() - start;
  ws.close();
  await api('DELETE', `api/sandboxes/${sid}/processes/${p.id}`);
  return ms(took);
}

function firstByteOnHost() {
  return new Promise((resolve) => {
    const start = process.hrtime.bigint();
    const child = spawn('printf', ['x']);
    child.stdout.once('data', () => resolve(ms(process.hrtime.bigint() - start)));
  });
}

// --- throughput ------------------------------------------------------------------------------
const total = short ? 256 << 20 : 1 << 30;
const producer = ['head', '-c', String(total), '/dev/zero'];

async function throughputInSandbox(sid) {
  const before = rssKib(gatewayPid);
  let peak = before;
  const p = await api('POST', `api/sandboxes/${sid}/processes`, { cmd: producer });
  const ws = attach(sid, p.id);
  let got = 0;
  let last = 0;
  const start = process.hrtime.bigint();
  await new Promise((resolve, reject) => {
    ws.on('message', (data, binary) => {
      // Until the client is attached the process never waits and its buffer
      // drops its oldest bytes: those count as sent, and are said in `attached`.
      if (!binary) {
        const msg = JSON.parse(data.toString());
        if (msg.type === 'attached') got += msg.stdout.dropped;
      }
      if (binary && data[0] === 1) got += data.length - 1;
      if (got - last > 64 << 20) {
        last = got;
        peak = Math.max(peak, rssKib(gatewayPid));
      }
    });
    ws.on('close', resolve);
    ws.on('error', reject);
  });
  const seconds = ms(process.hrtime.bigint() - start) / 1000;
  if (got !== total) throw new Error(`got ${got} of ${total}`);
  return { mibs: total / seconds / (1 << 20), rssGrowthKib: peak - before };
}

function throughputOnHost() {
  return new Promise((resolve) => {
    const start = process.hrtime.bigint();
    const child = spawn(producer[0], producer.slice(1));
    let got = 0;
    child.stdout.on('data', (d) => (got += d.length));
    child.on('close', () => resolve(total / (ms(process.hrtime.bigint() - start) / 1000) / (1 << 20)));
  });
}

// --- the port proxy --------------------------------------------------------------------------
const server = `
const http = require('http');
http.createServer((q, s) => { s.setHeader('Content-Length', 2); s.end('ok'); }).listen(8000, '127.0.0.1');
`;
const insideClient = (n) => `
const http = require('http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const times = [];
function one(i) {
  const t = process.hrtime.bigint();
  http.get({ host: '127.0.0.1', port: 8000, path: '/x', agent }, (r) => {
    r.resume();
    r.on('end', () => {
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      if (i + 1 < ${n}) one(i + 1);
      else { times.sort((a, b) => a - b); console.log(JSON.stringify({ p50: times[times.length >> 1], p90: times[Math.floor(times.length * 0.9)] })); agent.destroy(); }
    });
  });
}
one(0);
`;

async function proxyLatency(sid, n) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const times = [];
  for (let i = 0; i < n; ++i) {
    const t = process.hrtime.bigint();
    await new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: gatewayPort, path: '/x', agent,
        headers: { Host: `8000-${sid}.localhost:${gatewayPort}`, ...auth } }, (r) => {
        r.resume();
        r.on('end', resolve);
      }).on('error', reject);
    });
    times.push(ms(process.hrtime.bigint() - t));
  }
  agent.destroy();
  return { p50: pct(times, 0.5), p90: pct(times, 0.9) };
}

async function insideLatency(sid, n) {
  const p = await api('POST', `api/sandboxes/${sid}/processes`, { cmd: ['node', '-e', insideClient(n)] });
  const done = await api('GET', `api/sandboxes/${sid}/processes/${p.id}/wait?timeout_s=120`);
  if (done.exit_code !== 0) throw new Error(`the client in the sandbox: ${JSON.stringify(done)}`);
  const ws = attach(sid, p.id);
  let out = '';
  await new Promise((resolve) => {
    ws.on('message', (data, binary) => { if (binary && data[0] === 1) out += data.subarray(1).toString(); });
    ws.on('close', resolve);
  });
  return JSON.parse(out);
}

const wsServer = `
import asyncio, base64, hashlib
async def handle(reader, writer):
    head = (await reader.readuntil(b"\\r\\n\\r\\n")).decode()
    key = [l.split(":", 1)[1].strip() for l in head.split("\\r\\n") if l.lower().startswith("sec-websocket-key")][0]
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    writer.write(("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + "\\r\\n\\r\\n").encode())
    try:
        while True:
            b0, b1 = await reader.readexactly(2)
            if b0 & 0x0F == 8:
                break
            n = b1 & 0x7F
            mask = await reader.readexactly(4)
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(await reader.readexactly(n)))
            writer.write(bytes([0x81, len(data)]) + data)
            await writer.drain()
    except asyncio.IncompleteReadError:
        pass
    writer.close()
async def main():
    await (await asyncio.start_server(handle, "127.0.0.1", 8001, backlog=512)).serve_forever()
asyncio.run(main())
`;

async function manyWebSockets(sid, count, rounds) {
  const tokenUrl = (await api('POST', `api/sandboxes/${sid}/port-urls`, { port: 8001 })).token;
  const rtts = [];
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: count }, () => new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${gatewayPort}/ws?sandgate_port_token=${tokenUrl}`,
      { headers: { Host: `8001-${sid}.localhost:${gatewayPort}` } });
    let i = 0;
    let sent;
    const send = () => { sent = process.hrtime.bigint(); ws.send(`m${i}`); };
    ws.on('open', send);
    ws.on('message', () => {
      rtts.push(ms(process.hrtime.bigint() - sent));
      if (++i < rounds) send();
      else { ws.close(); resolve(); }
    });
    ws.on('error', reject);
  })));
  return { seconds: ms(process.hrtime.bigint() - start) / 1000, p50: pct(rtts, 0.5), p90: pct(rtts, 0.9),
           messages: rtts.length };
}

const sid = (await api('POST', 'api/sandboxes', { ttl_s: 1800 })).id;
try {
  const runs = short ? 10 : 50;
  await firstByteInSandbox(sid);  // warm: the first process of a sandbox pays for its pages
  const inSandbox = [];
  const onHost = [];
  for (let i = 0; i < runs; ++i) {
    inSandbox.push(await firstByteInSandbox(sid));
    onHost.push(await firstByteOnHost());
  }
  console.log(`| spawn to first byte, p50 (p90) | ${pct(inSandbox, 0.5).toFixed(2)} (${pct(inSandbox, 0.9).toFixed(2)}) ms | ` +
              `${pct(onHost, 0.5).toFixed(2)} (${pct(onHost, 0.9).toFixed(2)}) ms | ${runs} runs |`);
  const sandboxed = await throughputInSandbox(sid);
  const host = await throughputOnHost();
  console.log(`| output throughput, ${total >> 20} MiB | ${sandboxed.mibs.toFixed(0)} MiB/s | ${host.toFixed(0)} MiB/s | ` +
              `ratio ${(sandboxed.mibs / host).toFixed(2)}; gateway RSS growth ${sandboxed.rssGrowthKib} KiB |`);
  await fetch(`${base}api/sandboxes/${sid}/files/server.js`, { method: 'PUT', headers: auth, body: server });
  await api('POST', `api/sandboxes/${sid}/processes`, { cmd: ['node', 'server.js'] });
  await waitListening(sid, 8000);
  const n = short ? 100 : 1000;
  await proxyLatency(sid, 20);
  const proxied = await proxyLatency(sid, n);
  const inside = await insideLatency(sid, n);
  console.log(`| a request through the port proxy, p50 (p90) | ${proxied.p50.toFixed(3)} (${proxied.p90.toFixed(3)}) ms | ` +
              `${inside.p50.toFixed(3)} (${inside.p90.toFixed(3)}) ms from inside | added ${(proxied.p50 - inside.p50).toFixed(3)} ms; ${n} keep-alive requests |`);
  await fetch(`${base}api/sandboxes/${sid}/files/ws.py`, { method: 'PUT', headers: auth, body: wsServer });
  await api('POST', `api/sandboxes/${sid}/processes`, { cmd: ['python3', 'ws.py'] });
  await waitListening(sid, 8001);
  const count = short ? 50 : 200;
  const many = await manyWebSockets(sid, count, 10);
  console.log(`| ${count} WebSockets through the proxy at once, 10 echoes each | ${many.messages} echoes in ${many.seconds.toFixed(2)} s | ` +
              `| RTT p50 ${many.p50.toFixed(2)} ms, p90 ${many.p90.toFixed(2)} ms |`);
} finally {
  await api('DELETE', `api/sandboxes/${sid}`);
}
