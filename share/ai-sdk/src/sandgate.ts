// Sandgate: conversations mapped to sandboxes and kernels (one per language,
// started on first use). It keeps ids in a SessionStore and nothing else
// between calls; when a stored sandbox or kernel is gone (404: expired,
// culled, deleted or unknown) it creates a new one, runs the request there
// and says so in a note.
import { SandgateClient, type SandgateClientOptions, type ExecuteOptions } from './client.js';
import { KernelspecMissingError, SandgateError } from './errors.js';
import { DEFAULT_KERNELSPECS, LANGUAGES, LANGUAGE_NAMES, isLanguage, type Language } from './languages.js';
import { defaultDisplayStore, defaultSessionStore, type DisplayStore, type SessionRecord, type SessionStore, type StoredDisplay } from './stores.js';
import type { CommandRequest, CommandResult, CreateSandboxRequest, ExecuteResult, Network, Sandbox } from './types.js';

export interface SandgateOptions extends SandgateClientOptions {
  /** Conversation id → sandbox and kernel ids. The process-wide in-memory store by default. */
  store?: SessionStore;
  /** Where displays (PNG, HTML, ...) wait for the UI. The process-wide in-memory store by default. */
  displays?: DisplayStore;
  /** Kernelspec of the Python kernel; the gateway's default (`python`) when absent. */
  kernelName?: string;
  /**
   * Kernelspecs by language, over the defaults: python → `kernelName` or the
   * gateway's default, javascript → `javascript`, typescript → `typescript`,
   * r → `ir`, bash → `bash`.
   */
  kernelNames?: Partial<Record<Language, string>>;
  /**
   * The sandbox each conversation gets (`POST /api/sandboxes` body; `metadata.conversation`
   * is set to the conversation id), e.g. `{ ttl_s: 3600, network: 'none' }`.
   * `false`: no sandbox API, each conversation gets kernels of its own
   * (`POST /api/kernels` without `sandbox_id`, so each in a sandbox of its
   * own); runShell, files and setNetwork then are unavailable.
   */
  sandbox?: CreateSandboxRequest | false;
  /** Where the sandbox's workspace is mounted, as code inside sees it. */
  workspacePath?: string;
  /** An existing client to use instead of one built from these options. */
  client?: SandgateClient;
}

/** Options of `Sandgate.runCode`: how to execute, and in which language. */
export interface RunCodeOptions extends ExecuteOptions {
  /** The language, and so the kernel, the code runs in (default `python`). */
  language?: Language;
}

/** What a call did besides its answer: the id it used, and a note when it had to start over. */
export interface SessionCall<T> {
  value: T;
  record: SessionRecord;
  /** Set when the stored sandbox or kernel was gone and a new one was made. */
  note?: string;
}

const locks = new Map<string, Promise<unknown>>();

/** Runs `fn` after every earlier call for the same key in this process has ended. */
async function serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const previous = locks.get(key) ?? Promise.resolve();
  const run = previous.then(fn, fn);
  const tail = run.catch(() => {});
  locks.set(key, tail);
  try {
    return await run;
  } finally {
    if (locks.get(key) === tail) locks.delete(key);
  }
}

function ignoreNotFound(e: unknown): void {
  if (!(e instanceof SandgateError) || e.status !== 404) throw e;
}

/** The note of a call that found the conversation's sandbox gone and made a new one. */
function sandboxGoneNote(e: SandgateError): string {
  return `The sandbox of this conversation ${gonePhrase(e)}; a new one was created: files and the state of every kernel from before are gone.`;
}

/** How a note says what happened to a sandbox or kernel that answered 404. */
function gonePhrase(e: SandgateError): string {
  switch (e.reason) {
    case 'expired':
      return 'had expired';
    case 'culled':
      return 'had been stopped for being idle';
    case 'deleted':
      return 'had been deleted';
    default:
      return 'was gone';
  }
}

export class Sandgate {
  readonly client: SandgateClient;
  readonly store: SessionStore;
  readonly displays: DisplayStore;
  readonly kernelName: string | undefined;
  readonly kernelNames: Readonly<Partial<Record<Language, string>>>;
  readonly sandbox: CreateSandboxRequest | false;
  readonly workspacePath: string;

  constructor(options: SandgateOptions) {
    this.client = options.client ?? new SandgateClient(options);
    this.store = options.store ?? defaultSessionStore;
    this.displays = options.displays ?? defaultDisplayStore;
    this.kernelName = options.kernelName;
    this.kernelNames = { ...options.kernelNames };
    this.sandbox = options.sandbox ?? {};
    this.workspacePath = (options.workspacePath ?? '/workspace').replace(/\/+$/, '');
  }

  /** The absolute path, inside the sandbox, of a workspace-relative path. */
  sandboxPath(relative: string): string {
    return `${this.workspacePath}/${relative.replace(/^\/+/, '')}`;
  }

  /** A workspace-relative path from an absolute one under the workspace, or a relative one. */
  relativePath(path: string): string {
    if (path === this.workspacePath) return '';
    if (path.startsWith(this.workspacePath + '/')) return path.slice(this.workspacePath.length + 1);
    return path.replace(/^\.\//, '');
  }

  /** The kernelspec a language runs on; undefined for the gateway's default. */
  kernelspecFor(language: Language): string | undefined {
    return this.kernelNames[language] ?? (language === 'python' ? this.kernelName : undefined) ?? DEFAULT_KERNELSPECS[language];
  }

  /**
   * Runs code in the conversation's kernel of `options.language` (default
   * python), starting (or restarting) what is missing. A language whose
   * kernelspec the gateway lacks is a KernelspecMissingError.
   */
  runCode(sessionId: string, code: string, options: RunCodeOptions = {}): Promise<SessionCall<ExecuteResult>> {
    const { language = 'python', ...execute } = options;
    if (!isLanguage(language))
      return Promise.reject(new SandgateError(400, 'invalid_language', `Unknown language ${JSON.stringify(language)}; one of ${LANGUAGES.join(', ')}`));
    return serialized(sessionId, async () => {
      const rec = await this.load(sessionId);
      let note = await this.ensureKernel(sessionId, rec, language);
      try {
        return { value: await this.client.execute(rec.kernels[language]!, code, execute), record: rec, note };
      } catch (e) {
        if (!(e instanceof SandgateError) || e.status !== 404) throw e;
        // The code never ran: the kernel (or its sandbox) was gone. Start again and run it.
        note = await this.replaceKernel(sessionId, rec, language, e);
        return { value: await this.client.execute(rec.kernels[language]!, code, execute), record: rec, note };
      }
    });
  }

  /**
   * Sets the network of the conversation's sandbox (`PATCH /api/sandboxes/{id}/network`),
   * or creates the sandbox with it when the conversation has none yet (or its
   * sandbox is gone). A sandbox made again for the conversation later gets it
   * too. Above the operator's ceiling: `NetworkRefusedError`; malformed:
   * `InvalidNetworkError`.
   */
  setNetwork(sessionId: string, network: Network): Promise<SessionCall<Sandbox>> {
    return serialized(sessionId, async () => {
      if (this.sandbox === false) throw new SandgateError(400, 'no_sandbox_api', 'This tool set runs without sandboxes (sandbox: false)');
      const rec = await this.load(sessionId);
      rec.network = network;
      let note: string | undefined;
      if (rec.sandboxId) {
        try {
          const value = await this.client.setSandboxNetwork(rec.sandboxId, network);
          await this.store.set(sessionId, rec);
          return { value, record: rec };
        } catch (e) {
          if (!(e instanceof SandgateError) || e.status !== 404) throw e;
          note = sandboxGoneNote(e);
        }
      }
      const value = await this.newSandbox(sessionId, rec);
      return note ? { value, record: rec, note } : { value, record: rec };
    });
  }

  /** The conversation's sandbox as the gateway shows it (network, limits, kernels), or undefined when it has none. */
  async getSandbox(sessionId: string): Promise<Sandbox | undefined> {
    const rec = await this.store.get(sessionId);
    return rec?.sandboxId ? this.client.getSandbox(rec.sandboxId) : undefined;
  }

  /** Runs a command in the conversation's sandbox. */
  runCommand(sessionId: string, body: CommandRequest, options: { signal?: AbortSignal } = {}): Promise<SessionCall<CommandResult>> {
    return this.inSandbox(sessionId, (sandboxId) => this.client.runCommand(sandboxId, body, options));
  }

  /** Writes a file into the conversation's workspace; returns its path inside the sandbox. */
  uploadFile(
    sessionId: string,
    name: string,
    content: Uint8Array | ArrayBuffer | Blob | string
  ): Promise<{ path: string; size: number; hint: string; note?: string }> {
    return this.inSandbox(sessionId, (sandboxId) => this.client.uploadFile(sandboxId, this.relativePath(name), content)).then(
      ({ value, note }) => {
        const path = this.sandboxPath(value.path);
        const hint = `The user uploaded ${name} (${value.size} bytes); it is at ${path} in the sandbox, where runCode and runShell can read it.`;
        return note ? { path, size: value.size, hint, note } : { path, size: value.size, hint };
      }
    );
  }

  /** Reads a file of the conversation's workspace (absolute under the workspace, or relative to it). */
  async readFile(sessionId: string, path: string): Promise<Uint8Array> {
    const rec = await this.store.get(sessionId);
    if (!rec?.sandboxId) throw new SandgateError(404, 'no_sandbox', `Conversation ${sessionId} has no sandbox`);
    return this.client.downloadFile(rec.sandboxId, this.relativePath(path));
  }

  /** A display bundle kept out of the model's context, by the id the tool returned. */
  async getDisplay(id: string): Promise<StoredDisplay | undefined> {
    return this.displays.get(id);
  }

  /** Deletes the conversation's sandbox (or its kernels) and forgets it. */
  async endSession(sessionId: string): Promise<void> {
    return serialized(sessionId, async () => {
      const rec = await this.store.get(sessionId);
      await this.store.delete(sessionId);
      try {
        if (rec?.sandboxId) await this.client.deleteSandbox(rec.sandboxId);
        else for (const id of Object.values(rec?.kernels ?? {})) await this.client.deleteKernel(id).catch(ignoreNotFound);
      } catch (e) {
        ignoreNotFound(e);
      }
    });
  }

  // --- internals -------------------------------------------------------------

  private async load(sessionId: string): Promise<SessionRecord> {
    const rec = await this.store.get(sessionId);
    if (!rec) return { sandboxId: null, kernels: {} };
    const copy = structuredClone(rec);
    copy.kernels ??= {};
    return copy;
  }

  private async newSandbox(sessionId: string, rec: SessionRecord): Promise<Sandbox> {
    if (this.sandbox === false) throw new SandgateError(400, 'no_sandbox_api', 'This tool set runs without sandboxes (sandbox: false)');
    const body: CreateSandboxRequest = { ...this.sandbox, metadata: { ...this.sandbox.metadata, conversation: sessionId.slice(0, 256) } };
    if (rec.network !== undefined) body.network = rec.network;
    const sandbox = await this.client.createSandbox(body);
    rec.sandboxId = sandbox.id;
    rec.kernels = {};
    await this.store.set(sessionId, rec);
    return sandbox;
  }

  private async newKernel(sessionId: string, rec: SessionRecord, language: Language): Promise<void> {
    const name = this.kernelspecFor(language);
    const body: { name?: string; sandbox_id?: string } = {};
    if (name) body.name = name;
    if (rec.sandboxId) body.sandbox_id = rec.sandboxId;
    try {
      rec.kernels[language] = (await this.client.startKernel(body)).id;
    } catch (e) {
      // 404 is the sandbox gone, or a kernelspec this gateway does not have.
      if (name && e instanceof SandgateError && e.status === 404) {
        const specs = await this.client.listKernelspecs();
        if (!(name in specs.kernelspecs)) throw new KernelspecMissingError(name, language, Object.keys(specs.kernelspecs), e.request);
      }
      throw e;
    }
    await this.store.set(sessionId, rec);
  }

  /** Makes sure the record names a sandbox (in sandbox mode) and a kernel of the language; a note when it had to start over. */
  private async ensureKernel(sessionId: string, rec: SessionRecord, language: Language): Promise<string | undefined> {
    if (this.sandbox !== false && !rec.sandboxId) await this.newSandbox(sessionId, rec);
    if (rec.kernels[language]) return undefined;
    try {
      await this.newKernel(sessionId, rec, language);
      return undefined;
    } catch (e) {
      if (!(e instanceof SandgateError) || e.status !== 404 || e instanceof KernelspecMissingError || !rec.sandboxId) throw e;
      await this.newSandbox(sessionId, rec);
      await this.newKernel(sessionId, rec, language);
      return sandboxGoneNote(e);
    }
  }

  /** After a 404 on the kernel: a new kernel, in a new sandbox when the old one is gone too. */
  private async replaceKernel(sessionId: string, rec: SessionRecord, language: Language, cause: SandgateError): Promise<string> {
    const kernel = `The ${LANGUAGE_NAMES[language]} kernel of this conversation`;
    if (rec.sandboxId) {
      try {
        await this.client.getSandbox(rec.sandboxId);
      } catch (e) {
        if (!(e instanceof SandgateError) || e.status !== 404) throw e;
        await this.newSandbox(sessionId, rec);
        await this.newKernel(sessionId, rec, language);
        return sandboxGoneNote(e);
      }
      await this.newKernel(sessionId, rec, language);
      return `${kernel} had ended; a new one was started: its variables and imports from before are gone, files in the workspace are kept.`;
    }
    await this.newKernel(sessionId, rec, language);
    return `${kernel} ${gonePhrase(cause)}; a new one was started: variables and imports from before are gone.`;
  }

  /** Runs `fn` with the conversation's sandbox id, replacing a sandbox that is gone. */
  private inSandbox<T>(sessionId: string, fn: (sandboxId: string) => Promise<T>): Promise<SessionCall<T>> {
    return serialized(sessionId, async () => {
      if (this.sandbox === false) throw new SandgateError(400, 'no_sandbox_api', 'This tool set runs without sandboxes (sandbox: false)');
      const rec = await this.load(sessionId);
      if (!rec.sandboxId) await this.newSandbox(sessionId, rec);
      try {
        return { value: await fn(rec.sandboxId!), record: rec };
      } catch (e) {
        if (!(e instanceof SandgateError) || e.status !== 404) throw e;
        // A 404 can be the sandbox or a path inside it: only a sandbox that is gone is replaced.
        try {
          await this.client.getSandbox(rec.sandboxId!);
        } catch (e2) {
          if (!(e2 instanceof SandgateError) || e2.status !== 404) throw e2;
          await this.newSandbox(sessionId, rec);
          return { value: await fn(rec.sandboxId!), record: rec, note: sandboxGoneNote(e2) };
        }
        throw e;
      }
    });
  }
}
