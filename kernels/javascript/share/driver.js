// The Node side of sandgate-javascript: runs the cells the kernel sends.
//
//   node driver.js javascript|typescript
//
// fd 3 carries commands from the kernel, fd 4 events to it; both are frames
// of a 4-byte little-endian length and that many bytes of UTF-8 JSON
// (kernels/javascript/src/frame_codec.hpp). Cells run in this process's own
// global context (vm.Script.runInThisContext), rewritten so that their
// top-level declarations become globals and top-level await works (rewrite.js).
'use strict';

const fs = require('fs');
const net = require('net');
const path = require('path');
const util = require('util');
const vm = require('vm');
const { StringDecoder } = require('string_decoder');
const { createRequire } = require('module');
const { pathToFileURL } = require('url');

const COMMAND_FD = 3;
const EVENT_FD = 4;
const language = process.argv[2] === 'typescript' ? 'typescript' : 'javascript';

// --- frames to the kernel ---------------------------------------------------
function wellFormed(value) {
  return typeof value === 'string' && typeof value.toWellFormed === 'function' ? value.toWellFormed() : value;
}

function send(event) {
  const body = Buffer.from(JSON.stringify(event, (_key, value) => wellFormed(value)), 'utf8');
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32LE(body.length, 0);
  body.copy(frame, 4);
  let offset = 0;
  while (offset < frame.length) {
    try {
      offset += fs.writeSync(EVENT_FD, frame, offset, frame.length - offset);
    } catch (error) {
      if (error.code !== 'EAGAIN') {
        throw error;
      }
    }
  }
}

// The driver's own complaints go to the real stderr, not to a cell.
function log(text) {
  try {
    fs.writeSync(2, `sandgate-javascript driver: ${text}\n`);
  } catch (_) {
    // nothing to do
  }
}

// --- TypeScript (the parser both languages use) ------------------------------
function loadTypescript() {
  const tried = [];
  for (const candidate of [process.env.SANDGATE_TYPESCRIPT, '/usr/share/nodejs/typescript', 'typescript']) {
    if (!candidate) {
      continue;
    }
    try {
      return require(candidate);
    } catch (error) {
      tried.push(`${candidate}: ${error.message.split('\n')[0]}`);
    }
  }
  throw new Error(`cannot load the typescript package (${tried.join('; ')})`);
}

let ts;
try {
  ts = loadTypescript();
} catch (error) {
  send({ type: 'fatal', message: error.message });
  process.exit(70);
}
const { rewriteCell, SyntaxErrorAt } = require('./rewrite.js')(ts);
const typescript = language === 'typescript' ? require('./typescript.js')(ts) : null;

// --- output: process.stdout/stderr become stream events -----------------------
function hookStream(stream, name) {
  const decoder = new StringDecoder('utf8');
  stream.write = function write(chunk, encoding, callback) {
    if (typeof encoding === 'function') {
      callback = encoding;
      encoding = undefined;
    }
    const text = typeof chunk === 'string' ? chunk : decoder.write(Buffer.from(chunk, encoding));
    if (text.length > 0) {
      send({ type: 'stream', name, text });
    }
    if (typeof callback === 'function') {
      process.nextTick(callback);
    }
    return true;
  };
}
hookStream(process.stdout, 'stdout');
hookStream(process.stderr, 'stderr');

// --- display() ------------------------------------------------------------------
const inspectOptions = { depth: 4, colors: false, maxArrayLength: 200, maxStringLength: 100000 };
const inspect = (value) => util.inspect(value, inspectOptions);

function base64Of(data) {
  if (typeof data === 'string') {
    return data;
  }
  if (ArrayBuffer.isView(data)) {
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
  }
  if (data instanceof ArrayBuffer) {
    return Buffer.from(data).toString('base64');
  }
  throw new TypeError('expected a Buffer, a typed array, an ArrayBuffer or a base64 string');
}

function isMimeBundle(value) {
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) {
    return false;
  }
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => /^[\w.+-]+\/[\w.+-]+$/.test(key));
}

function publishDisplay(data, metadata) {
  send({ type: 'display', data, metadata: metadata && typeof metadata === 'object' ? metadata : {} });
}

// Front ends read an image's size from the metadata under its MIME type, as
// IPython's Image(width=...) sends it: { 'image/png': { width: 160 } }. The
// keys IPython puts there (width, height, unconfined) move there (what the
// metadata already has under that type wins); other keys stay as given.
const IMAGE_KEYS = ['width', 'height', 'unconfined'];

function imageMetadata(mimeType, metadata) {
  if (metadata === null || typeof metadata !== 'object') {
    return metadata;
  }
  const entries = Object.entries(metadata);
  const sizes = entries.filter(([key]) => IMAGE_KEYS.includes(key));
  if (sizes.length === 0) {
    return metadata;
  }
  const rest = Object.fromEntries(entries.filter(([key]) => !IMAGE_KEYS.includes(key)));
  const given = rest[mimeType] !== null && typeof rest[mimeType] === 'object' ? rest[mimeType] : {};
  return { ...rest, [mimeType]: { ...Object.fromEntries(sizes), ...given } };
}

function publishImage(mimeType, data, text, metadata) {
  publishDisplay({ [mimeType]: data, 'text/plain': text }, imageMetadata(mimeType, metadata));
}

// The image type of bytes that start with a PNG or JPEG signature, or null.
function imageTypeOf(value) {
  if (!ArrayBuffer.isView(value) && !(value instanceof ArrayBuffer)) {
    return null;
  }
  const bytes = ArrayBuffer.isView(value)
    ? new Uint8Array(value.buffer, value.byteOffset, Math.min(value.byteLength, 8))
    : new Uint8Array(value, 0, Math.min(value.byteLength, 8));
  const startsWith = (signature) => signature.every((byte, i) => bytes[i] === byte);
  if (startsWith([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) {
    return 'png';
  }
  return startsWith([0xff, 0xd8, 0xff]) ? 'jpeg' : null;
}

function display(value, metadata) {
  const image = imageTypeOf(value);
  if (image) {
    display[image](value, metadata);  // display(fs.readFileSync('chart.png')) shows the chart
    return;
  }
  publishDisplay(isMimeBundle(value) ? value : { 'text/plain': inspect(value) }, metadata);
}
display.png = (data, metadata) => publishImage('image/png', base64Of(data), '<PNG image>', metadata);
display.jpeg = (data, metadata) => publishImage('image/jpeg', base64Of(data), '<JPEG image>', metadata);
display.html = (html, metadata) => publishDisplay({ 'text/html': String(html), 'text/plain': '<HTML>' }, metadata);
display.svg = (svg, metadata) => publishImage('image/svg+xml', String(svg), '<SVG image>', metadata);
display.markdown = (text, metadata) => publishDisplay({ 'text/markdown': String(text), 'text/plain': String(text) }, metadata);
display.json = (value, metadata) =>
  publishDisplay({ 'application/json': JSON.parse(JSON.stringify(value)), 'text/plain': inspect(value) }, metadata);
display.text = (text, metadata) => publishDisplay({ 'text/plain': String(text) }, metadata);

// --- require() and import() from the workspace -------------------------------------
// Packages are looked up from the current directory up, then from $HOME.
function requirers() {
  const bases = [process.cwd()];
  if (process.env.HOME && process.env.HOME !== process.cwd()) {
    bases.push(process.env.HOME);
  }
  return bases.map((base) => createRequire(path.join(base, '[sandgate cell]')));
}

function resolveFromWorkspace(specifier) {
  let first;
  for (const requirer of requirers()) {
    try {
      return requirer.resolve(specifier);
    } catch (error) {
      first = first || error;
    }
  }
  throw first;
}

function workspaceRequire(specifier) {
  return require(resolveFromWorkspace(specifier));
}
workspaceRequire.resolve = resolveFromWorkspace;
workspaceRequire.cache = require.cache;

async function workspaceImport(specifier) {
  let resolved;
  try {
    resolved = resolveFromWorkspace(String(specifier));
  } catch (_) {
    return import(specifier);  // builtins, URLs and ESM-only packages
  }
  return import(path.isAbsolute(resolved) ? pathToFileURL(resolved).href : resolved);
}

Object.defineProperty(globalThis, '__sandgate', {
  value: Object.freeze({
    import: workspaceImport,
    // Called as a rewritten TypeScript cell starts: the function it calls with
    // the names of each declaration that has run (rewrite.js).
    declarations: () => (current ? current.declarations() : () => {}),
  }),
  enumerable: false,
});
globalThis.display = display;
globalThis.require = workspaceRequire;
// What CommonJS code pasted into a cell expects to find.
globalThis.module = { exports: {} };
globalThis.exports = globalThis.module.exports;
Object.defineProperty(globalThis, '__dirname', { get: () => process.cwd(), configurable: true });
Object.defineProperty(globalThis, '__filename', {
  get: () => path.join(process.cwd(), '[sandgate cell]'),
  configurable: true,
});

// --- cells -----------------------------------------------------------------------------
class Interrupted extends Error {
  constructor() {
    super('execution interrupted');
    this.name = 'Interrupted';
  }
}

let current = null;  // the running cell: { abort(error), declarations() }

function stackLines(error) {
  const own = __dirname + path.sep;
  return String(error.stack || `${error.name}: ${error.message}`)
    .split('\n')
    .filter((line) => !line.includes(own) && !line.includes('node:vm:') && !line.includes('(node:internal/'));
}

function errorReply(error) {
  if (error instanceof Interrupted ||
      (error && error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED')) {
    return { status: 'error', ename: 'Interrupted', evalue: 'execution interrupted',
             traceback: ['Interrupted: execution interrupted'] };
  }
  if (error instanceof SyntaxErrorAt) {
    return { status: 'error', ename: 'SyntaxError', evalue: error.message, traceback: error.traceback };
  }
  if (error && error.name === 'TSError' && Array.isArray(error.traceback)) {
    return { status: 'error', ename: 'TSError', evalue: error.message, traceback: error.traceback };
  }
  if (error !== null && typeof error === 'object' && typeof error.message === 'string') {
    const ename = String(error.name || (error.constructor && error.constructor.name) || 'Error');
    return { status: 'error', ename, evalue: error.message, traceback: stackLines(error) };
  }
  const text = inspect(error);
  return { status: 'error', ename: 'Uncaught', evalue: text, traceback: [`Uncaught ${text}`] };
}

process.on('SIGINT', () => {
  if (current) {
    current.abort(new Interrupted());
  }
});
process.on('uncaughtException', (error) => {
  if (current) {
    current.abort(error);
  } else {
    send({ type: 'stream', name: 'stderr', text: `Uncaught ${stackLines(error).join('\n')}\n` });
  }
});
process.on('unhandledRejection', (reason) => {
  if (current) {
    current.abort(reason);
  } else {
    send({ type: 'stream', name: 'stderr', text: `Unhandled rejection: ${errorReply(reason).traceback.join('\n')}\n` });
  }
});

async function execute(command) {
  let abort;
  const aborted = new Promise((_resolve, reject) => {
    abort = reject;
  });
  aborted.catch(() => {});
  current = { abort, declarations: () => () => {} };
  let reply;
  try {
    let code = command.code;
    if (typescript) {
      // The checker learns the cell's names as it runs, so that an error or
      // an interrupt keeps those whose declaration ran, as it keeps their values.
      const checked = typescript.check(code);
      code = checked.javascript;
      current.declarations = checked.declarations;
    }
    const rewritten = rewriteCell(code, { reportDeclarations: typescript !== null });
    const script = new vm.Script(rewritten, { filename: `cell${command.count}.${typescript ? 'ts' : 'js'}` });
    const completion = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
    completion.catch(() => {});
    const value = await Promise.race([completion, aborted]);
    // Rejections nobody handled during the cell fail it too: they are
    // reported once the microtasks have run, before the next macrotask.
    await Promise.race([new Promise((resolve) => setImmediate(resolve)), aborted]);
    reply = { status: 'ok', result: value === undefined ? null : { 'text/plain': inspect(value) } };
  } catch (error) {
    reply = errorReply(error);
  } finally {
    current = null;
  }
  send({ type: 'done', id: command.id, ...reply });
}

// --- completion and inspection -------------------------------------------------------
// Cursor positions are Unicode code points (Jupyter); JS strings count UTF-16 units.
function utf16Index(text, codePoints) {
  let index = 0;
  for (let n = 0; n < codePoints && index < text.length; ++n) {
    index += text.codePointAt(index) > 0xffff ? 2 : 1;
  }
  return index;
}
const codePointLength = (text) => Array.from(text).length;

const KEYWORDS = ['await', 'async', 'break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default',
  'delete', 'do', 'else', 'export', 'extends', 'false', 'finally', 'for', 'function', 'if', 'import', 'in',
  'instanceof', 'let', 'new', 'null', 'return', 'static', 'super', 'switch', 'this', 'throw', 'true', 'try',
  'typeof', 'undefined', 'var', 'void', 'while', 'with', 'yield'];

// Follows a chain of property names from the global object; getters run, nothing else.
function lookup(chain) {
  let value = globalThis;
  for (const name of chain) {
    if (value === null || value === undefined) {
      return { found: false };
    }
    try {
      value = value[name];
    } catch (_) {
      return { found: false };
    }
  }
  return { found: true, value };
}

function propertyNames(value) {
  const names = new Set();
  let object = value;
  if (object !== null && object !== undefined && typeof object !== 'object' && typeof object !== 'function') {
    object = Object(object);
  }
  for (let depth = 0; object !== null && object !== undefined && depth < 50; ++depth) {
    for (const name of Object.getOwnPropertyNames(object)) {
      names.add(name);
    }
    object = Object.getPrototypeOf(object);
  }
  return [...names].filter((name) => /^[A-Za-z_$][\w$]*$/.test(name));
}

function complete(command) {
  const code = command.code;
  const cursor = utf16Index(code, command.cursor);
  const before = code.slice(0, cursor);
  const match = /((?:[A-Za-z_$][\w$]*\s*\.\s*)*)([A-Za-z_$][\w$]*)?$/.exec(before);
  const prefix = match[2] || '';
  const chain = match[1] ? match[1].split('.').map((part) => part.trim()).filter(Boolean) : [];
  let candidates;
  if (chain.length > 0) {
    const target = lookup(chain);
    candidates = target.found ? propertyNames(target.value) : [];
  } else {
    candidates = [...propertyNames(globalThis), ...KEYWORDS];
  }
  const matches = [...new Set(candidates)].filter((name) => name.startsWith(prefix) && !name.startsWith('__sandgate'))
    .sort().slice(0, 1000);
  const start = codePointLength(before) - codePointLength(prefix);
  return { type: 'completion', id: command.id, matches, cursor_start: start, cursor_end: command.cursor };
}

function inspectAt(command) {
  const code = command.code;
  const cursor = utf16Index(code, command.cursor);
  const left = /(?:[A-Za-z_$][\w$]*\s*\.\s*)*[A-Za-z_$][\w$]*$|(?:[A-Za-z_$][\w$]*\s*\.\s*)+$/.exec(code.slice(0, cursor));
  const right = /^[\w$]*/.exec(code.slice(cursor));
  const expression = ((left ? left[0] : '') + right[0]).replace(/\s+/g, '').replace(/\.$/, '');
  if (!expression) {
    return { type: 'inspection', id: command.id, found: false };
  }
  const target = lookup(expression.split('.'));
  if (!target.found || (target.value === undefined && !(expression in globalThis) && expression.indexOf('.') < 0)) {
    return { type: 'inspection', id: command.id, found: false };
  }
  const value = target.value;
  let text = `${expression}: ${typeof value}\n${util.inspect(value, { depth: 1, colors: false })}`;
  if (typeof value === 'function' && command.detail_level > 0) {
    text += `\n\n${Function.prototype.toString.call(value)}`;
  }
  return { type: 'inspection', id: command.id, found: true, data: { 'text/plain': text } };
}

function isComplete(command) {
  const kind = language === 'typescript' ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile('cell', command.code, ts.ScriptTarget.Latest, false, kind);
  const diagnostics = source.parseDiagnostics || [];
  const end = command.code.trimEnd().length;
  let status = 'complete';
  if (diagnostics.length > 0) {
    status = diagnostics.every((d) => d.start >= end || /^Unterminated/.test(ts.flattenDiagnosticMessageText(d.messageText, '\n')))
      ? 'incomplete' : 'invalid';
  }
  return { type: 'is_complete', id: command.id, status, indent: status === 'incomplete' ? '  ' : '' };
}

// --- the command loop ----------------------------------------------------------------
async function handle(command) {
  switch (command.type) {
    case 'execute':
      return execute(command);
    case 'complete':
      return send(complete(command));
    case 'inspect':
      return send(inspectAt(command));
    case 'is_complete':
      return send(isComplete(command));
    default:
      log(`unknown command ${command.type}`);
      return undefined;
  }
}

let pending = Buffer.alloc(0);
let queue = Promise.resolve();
const input = new net.Socket({ fd: COMMAND_FD, readable: true, writable: false });
input.on('data', (chunk) => {
  pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
  while (pending.length >= 4) {
    const length = pending.readUInt32LE(0);
    if (pending.length < 4 + length) {
      break;
    }
    const command = JSON.parse(pending.subarray(4, 4 + length).toString('utf8'));
    pending = pending.subarray(4 + length);
    queue = queue.then(() => handle(command)).catch((error) => log(error.stack));
  }
});
input.on('end', () => process.exit(0));
input.on('error', () => process.exit(0));

send({ type: 'ready', node: process.versions.node, typescript: ts.version, language });
