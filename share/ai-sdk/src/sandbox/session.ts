// One Sandgate sandbox as the AI SDK's sandbox session (ai 7's
// Experimental_SandboxSession) and the harness's network sandbox session:
// files anywhere in the sandbox's tree (/fs), processes (POST /processes and
// their attach WebSocket), ports (signed URLs), the network policy (PATCH
// .../network) and its end (DELETE). Relative paths resolve against
// /workspace, where commands start.
import type { HarnessV1NetworkPolicy, HarnessV1NetworkSandboxSession, HarnessV1PortEndpoint } from '@ai-sdk/harness';
import type { Experimental_SandboxSession as SandboxSession } from 'ai';
import type { SandgateClient } from '../client.js';
import { SandgateError } from '../errors.js';
import type { Sandbox } from '../types.js';
import { SandboxApi, isMissingPath } from './api.js';
import { encodeText, textDecoder } from './encoding.js';
import { describeNetwork, toSandgateNetwork, type SandgateNetworkOptions } from './network.js';
import { SandgateProcess } from './process.js';

type Options<K extends keyof SandboxSession> = SandboxSession[K] extends (o: infer O) => unknown ? O : never;
type SpawnOptions = Options<'run'> & { stdin?: boolean };
type RunResult = Awaited<ReturnType<SandboxSession['run']>>;
type FileStat = NonNullable<Awaited<ReturnType<SandboxSession['stat']>>>;
type DirectoryEntry = NonNullable<Awaited<ReturnType<SandboxSession['listDirectory']>>>[number];

export interface SandgateSessionSettings {
  /** Ports declared for the session (listed in `ports` and the description). */
  ports?: readonly number[];
  /** Which URL getPortEndpoint signs: by path on the gateway's host (default), or by host name. */
  portRoute?: 'path' | 'host';
  /** Lifetime of a signed port URL, in seconds (the gateway's default, 3600, when absent). */
  portUrlTtlS?: number;
  /** Added to the policies setNetworkPolicy sends for 'allow-all' and 'custom' (ports, limits). */
  networkOptions?: SandgateNetworkOptions;
}

function checkPort(port: number): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new SandgateError(400, 'bad_port', `A port is a number from 1 to 65535, not ${port}`);
}

function nullIfMissing<T>(e: unknown): T | null {
  if (isMissingPath(e)) return null;
  throw e;
}

/** Collects a stream as text, keeping at most `max` UTF-16 code units; `length` counts them all. */
async function collect(stream: ReadableStream<Uint8Array>, max: number | undefined): Promise<{ text: string; length: number }> {
  const decoder = new TextDecoder();
  let text = '';
  let length = 0;
  const keep = (s: string) => {
    length += s.length;
    if (max === undefined) text += s;
    else if (text.length < max) text += s.slice(0, max - text.length);
  };
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    keep(decoder.decode(value, { stream: true }));
  }
  keep(decoder.decode());
  return { text, length };
}

export class SandgateSandboxSession implements HarnessV1NetworkSandboxSession, SandboxSession {
  /** The sandbox's id. */
  readonly id: string;
  /** Where commands start and relative paths resolve. */
  readonly defaultWorkingDirectory = '/workspace';
  readonly spawn: SandboxSession['spawn'];

  private readonly api: SandboxApi;
  private sandbox: Sandbox;
  private declared: number[];
  private listening: number[] = [];
  private ending: Promise<void> | undefined;
  private view: SandboxSession | undefined;

  constructor(
    private readonly client: SandgateClient,
    sandbox: Sandbox,
    private readonly settings: SandgateSessionSettings = {}
  ) {
    this.id = sandbox.id;
    this.sandbox = sandbox;
    this.api = new SandboxApi(client, sandbox.id);
    this.declared = [...new Set(settings.ports ?? [])].sort((a, b) => a - b);
    this.declared.forEach(checkPort);
    this.spawn = ((options: SpawnOptions) => this.start(options)) as SandboxSession['spawn'];
  }

  /** The sandbox as the gateway last showed it (network, limits, expiry, metadata). */
  get info(): Sandbox {
    return this.sandbox;
  }

  /** What the agent should know about this sandbox, for its instructions. */
  get description(): string {
    const gib = (this.sandbox.limits?.workspace_bytes ?? 0) / 2 ** 30;
    const ports = this.ports;
    return [
      'You work in a Linux sandbox (Debian) as an unprivileged user, without root.',
      `The working directory is ${this.defaultWorkingDirectory}: commands start there and relative paths resolve against it.`,
      `Files there last as long as the sandbox${gib ? ` (at most ${+gib.toFixed(2)} GiB)` : ''}; /tmp is writable too, system directories are read-only.`,
      describeNetwork(this.sandbox.network),
      'A server you start that listens on a TCP port (on 127.0.0.1 or 0.0.0.0) is reachable by the user through the gateway' +
        (ports.length ? `; ports in use: ${ports.join(', ')}.` : '.'),
    ].join(' ');
  }

  /** Ports declared (the settings, setPorts) and those found listening (refreshPorts). */
  get ports(): readonly number[] {
    return [...new Set([...this.declared, ...this.listening])].sort((a, b) => a - b);
  }

  /** An absolute path in the sandbox: relative ones resolve against /workspace. */
  resolvePath(path: string): string {
    if (path.startsWith('/')) return path;
    const rel = path.replace(/^(\.\/)+/, '');
    return rel === '' || rel === '.' ? this.defaultWorkingDirectory : `${this.defaultWorkingDirectory}/${rel}`;
  }

  // --- Files -----------------------------------------------------------------

  async readFile({ path, abortSignal }: Options<'readFile'>): Promise<ReadableStream<Uint8Array> | null> {
    const res = await this.api.read(this.resolvePath(path), { signal: abortSignal }).catch(nullIfMissing<Response>);
    return res ? (res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() })) : null;
  }

  async readBinaryFile({ path, abortSignal }: Options<'readBinaryFile'>): Promise<Uint8Array | null> {
    const res = await this.api.read(this.resolvePath(path), { signal: abortSignal }).catch(nullIfMissing<Response>);
    return res ? new Uint8Array(await res.arrayBuffer()) : null;
  }

  async readTextFile({ path, abortSignal, encoding, startLine, endLine }: Options<'readTextFile'>): Promise<string | null> {
    for (const [name, n] of [['startLine', startLine], ['endLine', endLine]] as const)
      if (n !== undefined && (!Number.isInteger(n) || n < 1)) throw new SandgateError(400, 'bad_line', `${name} is a line number from 1, not ${n}`);
    const decoder = textDecoder(encoding);
    const res = await this.api.read(this.resolvePath(path), { signal: abortSignal, startLine, endLine }).catch(nullIfMissing<Response>);
    return res ? decoder.decode(await res.arrayBuffer()) : null;
  }

  /** Streams the content into the file as the PUT's body (never held whole); parents are made. */
  async writeFile({ path, content, abortSignal }: Options<'writeFile'>): Promise<void> {
    await this.api.write(this.resolvePath(path), content, abortSignal);
  }

  async writeBinaryFile({ path, content, abortSignal }: Options<'writeBinaryFile'>): Promise<void> {
    await this.api.write(this.resolvePath(path), content, abortSignal);
  }

  async writeTextFile({ path, content, abortSignal, encoding }: Options<'writeTextFile'>): Promise<void> {
    await this.api.write(this.resolvePath(path), encodeText(content, encoding), abortSignal);
  }

  async stat({ path, abortSignal }: Options<'stat'>): Promise<FileStat | null> {
    const s = await this.api.stat(this.resolvePath(path), true, abortSignal).catch(nullIfMissing<never>);
    if (!s) return null;
    return { type: s.type === 'file' || s.type === 'directory' ? s.type : 'other', size: s.size };
  }

  async listDirectory({ path, abortSignal }: Options<'listDirectory'>): Promise<DirectoryEntry[] | null> {
    const entries = await this.api.list(this.resolvePath(path), abortSignal).catch(nullIfMissing<never>);
    return entries ? entries.map(({ name, type }) => ({ name, type })) : null;
  }

  /** Deletes a file or a link (not its target); false when there is none; a directory is refused. */
  async deleteFile({ path, abortSignal }: Options<'deleteFile'>): Promise<boolean> {
    const abs = this.resolvePath(path);
    try {
      await this.api.remove(abs, abortSignal);
      return true;
    } catch (e) {
      return nullIfMissing<never>(e) ?? false;
    }
  }

  // --- Processes -------------------------------------------------------------

  private start({ command, workingDirectory, env, abortSignal, stdin }: SpawnOptions): Promise<SandgateProcess> {
    return SandgateProcess.start(
      this.api,
      {
        cmd: command,
        cwd: this.resolvePath(workingDirectory ?? this.defaultWorkingDirectory),
        ...(env ? { env } : {}),
        stdin: !!stdin,
      },
      abortSignal
    );
  }

  /**
   * Runs a command to its end. With `maxOutputLength` each stream keeps its
   * first that many UTF-16 code units, the rest is read and dropped, and
   * `stdoutLength`/`stderrLength` give the full lengths.
   */
  async run(options: Options<'run'>): Promise<RunResult> {
    const max = options.maxOutputLength;
    if (max !== undefined && !(Number.isSafeInteger(max) && max > 0))
      throw new SandgateError(400, 'bad_max_output_length', `maxOutputLength is a positive safe integer, not ${max}`);
    const p = await this.start({ ...options, stdin: false });
    const [out, err, { exitCode }] = await Promise.all([collect(p.stdout, max), collect(p.stderr, max), p.wait()]);
    const result: RunResult = { exitCode, stdout: out.text, stderr: err.text };
    if (max !== undefined) Object.assign(result, { stdoutLength: out.length, stderrLength: err.length });
    return result;
  }

  // --- Ports -----------------------------------------------------------------

  /** Asks the sandbox what listens now (`GET /ports`); `ports` includes them from then on. */
  async refreshPorts(abortSignal?: AbortSignal): Promise<readonly number[]> {
    this.listening = [...new Set((await this.api.listPorts(abortSignal)).map((p) => p.port))];
    return this.ports;
  }

  /**
   * A signed URL of a port (`POST /port-urls`): its token rides in the URL's
   * query, and in `headers` as the cookie other paths of the port accept.
   * `ws` gives a ws:// (wss://) URL; the scheme otherwise is the gateway's.
   */
  async getPortEndpoint({ port, protocol }: { port: number; protocol?: 'http' | 'https' | 'ws' }): Promise<HarnessV1PortEndpoint> {
    checkPort(port);
    const signed = await this.api.signPortUrl(port, this.settings.portRoute ?? 'path', this.settings.portUrlTtlS);
    const url = new URL(signed.url);
    if (protocol === 'ws') url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return { url: url.toString(), headers: { Cookie: `sandgate_port=${signed.token}` } };
  }

  /** @deprecated As the harness's: use getPortEndpoint. */
  async getPortUrl(options: { port: number; protocol?: 'http' | 'https' | 'ws' }): Promise<string> {
    return (await this.getPortEndpoint(options)).url;
  }

  /** Declares the session's ports (replacing the ones before). Every port is reachable in Sandgate; this names them. */
  async setPorts(ports: ReadonlyArray<number>): Promise<void> {
    ports.forEach(checkPort);
    this.declared = [...new Set(ports)].sort((a, b) => a - b);
  }

  // --- Network and lifecycle ---------------------------------------------------

  /**
   * `PATCH /api/sandboxes/{id}/network`: 'allow-all' is mode open, 'deny-all'
   * none, 'custom' an allow-list. Above the operator's ceiling it rejects with
   * the gateway's NetworkRefusedError, and nothing changes.
   */
  async setNetworkPolicy(policy: HarnessV1NetworkPolicy): Promise<void> {
    this.sandbox = await this.client.setSandboxNetwork(this.id, toSandgateNetwork(policy, this.settings.networkOptions));
  }

  /** The same sandbox with files and processes only: no ports, network or end. */
  restricted(): SandboxSession {
    const self = this;
    this.view ??= Object.freeze({
      get description() {
        return self.description;
      },
      readFile: (o) => this.readFile(o),
      readBinaryFile: (o) => this.readBinaryFile(o),
      readTextFile: (o) => this.readTextFile(o),
      writeFile: (o) => this.writeFile(o),
      writeBinaryFile: (o) => this.writeBinaryFile(o),
      writeTextFile: (o) => this.writeTextFile(o),
      stat: (o) => this.stat(o),
      listDirectory: (o) => this.listDirectory(o),
      deleteFile: (o) => this.deleteFile(o),
      spawn: this.spawn,
      run: (o) => this.run(o),
    } satisfies SandboxSession);
    return this.view;
  }

  /** Ends the sandbox (`DELETE`): Sandgate cannot pause one, so its processes and files are gone. Idempotent. */
  stop(): Promise<void> {
    this.ending ??= this.client.deleteSandbox(this.id).catch((e) => {
      if (e instanceof SandgateError && e.status === 404) return;
      this.ending = undefined;
      throw e;
    });
    return this.ending;
  }

  /** As stop: the sandbox and everything in it are deleted. */
  destroy(): Promise<void> {
    return this.stop();
  }
}
