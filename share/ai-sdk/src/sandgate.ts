// Sandgate: conversations mapped to sandboxes and kernels. It keeps ids in a
// SessionStore and nothing else between calls; when a stored sandbox or
// kernel is gone (404: expired, culled, deleted or unknown) it creates a new
// one, runs the request there and says so in a note.
import { SandgateClient, type SandgateClientOptions, type ExecuteOptions } from './client.js';
import { SandgateError } from './errors.js';
import { defaultDisplayStore, defaultSessionStore, type DisplayStore, type SessionRecord, type SessionStore, type StoredDisplay } from './stores.js';
import type { CommandRequest, CommandResult, CreateSandboxRequest, ExecuteResult } from './types.js';

export interface SandgateOptions extends SandgateClientOptions {
  /** Conversation id → sandbox and kernel ids. The process-wide in-memory store by default. */
  store?: SessionStore;
  /** Where displays (PNG, HTML, ...) wait for the UI. The process-wide in-memory store by default. */
  displays?: DisplayStore;
  /** Kernelspec of the Python kernel; the gateway's default (`python`) when absent. */
  kernelName?: string;
  /**
   * The sandbox each conversation gets (`POST /api/sandboxes` body; `metadata.conversation`
   * is set to the conversation id). `false`: no sandbox API, each conversation
   * gets a kernel of its own (`POST /api/kernels` without `sandbox_id`); runShell
   * and files then are unavailable.
   */
  sandbox?: CreateSandboxRequest | false;
  /** Where the sandbox's workspace is mounted, as code inside sees it. */
  workspacePath?: string;
  /** An existing client to use instead of one built from these options. */
  client?: SandgateClient;
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
  readonly sandbox: CreateSandboxRequest | false;
  readonly workspacePath: string;

  constructor(options: SandgateOptions) {
    this.client = options.client ?? new SandgateClient(options);
    this.store = options.store ?? defaultSessionStore;
    this.displays = options.displays ?? defaultDisplayStore;
    this.kernelName = options.kernelName;
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

  /** Runs Python in the conversation's kernel, starting (or restarting) what is missing. */
  runCode(sessionId: string, code: string, options: ExecuteOptions = {}): Promise<SessionCall<ExecuteResult>> {
    return serialized(sessionId, async () => {
      const rec = await this.load(sessionId);
      let note = await this.ensureKernel(sessionId, rec);
      try {
        return { value: await this.client.execute(rec.kernelId!, code, options), record: rec, note };
      } catch (e) {
        if (!(e instanceof SandgateError) || e.status !== 404) throw e;
        // The code never ran: the kernel (or its sandbox) was gone. Start again and run it.
        note = await this.replaceKernel(sessionId, rec, e);
        return { value: await this.client.execute(rec.kernelId!, code, options), record: rec, note };
      }
    });
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
        const hint = `The user uploaded ${name} (${value.size} bytes); it is at ${path} in the sandbox, where runPython and runShell can read it.`;
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

  /** Deletes the conversation's sandbox (or kernel) and forgets it. */
  async endSession(sessionId: string): Promise<void> {
    return serialized(sessionId, async () => {
      const rec = await this.store.get(sessionId);
      await this.store.delete(sessionId);
      try {
        if (rec?.sandboxId) await this.client.deleteSandbox(rec.sandboxId);
        else if (rec?.kernelId) await this.client.deleteKernel(rec.kernelId);
      } catch (e) {
        if (!(e instanceof SandgateError) || e.status !== 404) throw e;
      }
    });
  }

  // --- internals -------------------------------------------------------------

  private async load(sessionId: string): Promise<SessionRecord> {
    const rec = await this.store.get(sessionId);
    return rec ? { ...rec } : { sandboxId: null, kernelId: null };
  }

  private async newSandbox(sessionId: string, rec: SessionRecord): Promise<void> {
    if (this.sandbox === false) throw new SandgateError(400, 'no_sandbox_api', 'This tool set runs without sandboxes (sandbox: false)');
    const body: CreateSandboxRequest = { ...this.sandbox, metadata: { ...this.sandbox.metadata, conversation: sessionId.slice(0, 256) } };
    rec.sandboxId = (await this.client.createSandbox(body)).id;
    rec.kernelId = null;
    await this.store.set(sessionId, rec);
  }

  private async newKernel(sessionId: string, rec: SessionRecord): Promise<void> {
    const body: { name?: string; sandbox_id?: string } = {};
    if (this.kernelName) body.name = this.kernelName;
    if (rec.sandboxId) body.sandbox_id = rec.sandboxId;
    rec.kernelId = (await this.client.startKernel(body)).id;
    await this.store.set(sessionId, rec);
  }

  /** Makes sure the record names a sandbox (in sandbox mode) and a kernel; a note when it had to start over. */
  private async ensureKernel(sessionId: string, rec: SessionRecord): Promise<string | undefined> {
    if (this.sandbox !== false && !rec.sandboxId) await this.newSandbox(sessionId, rec);
    if (rec.kernelId) return undefined;
    try {
      await this.newKernel(sessionId, rec);
      return undefined;
    } catch (e) {
      if (!(e instanceof SandgateError) || e.status !== 404 || !rec.sandboxId) throw e;
      const note = `The sandbox of this conversation ${gonePhrase(e)}; a new one was created: files and Python state from before are gone.`;
      await this.newSandbox(sessionId, rec);
      await this.newKernel(sessionId, rec);
      return note;
    }
  }

  /** After a 404 on the kernel: a new kernel, in a new sandbox when the old one is gone too. */
  private async replaceKernel(sessionId: string, rec: SessionRecord, cause: SandgateError): Promise<string> {
    if (rec.sandboxId) {
      try {
        await this.client.getSandbox(rec.sandboxId);
      } catch (e) {
        if (!(e instanceof SandgateError) || e.status !== 404) throw e;
        await this.newSandbox(sessionId, rec);
        await this.newKernel(sessionId, rec);
        return `The sandbox of this conversation ${gonePhrase(e)}; a new one was created: files and Python state from before are gone.`;
      }
      await this.newKernel(sessionId, rec);
      return 'The Python kernel of this conversation had ended; a new one was started: variables and imports from before are gone, files in the workspace are kept.';
    }
    await this.newKernel(sessionId, rec);
    return `The Python kernel of this conversation ${gonePhrase(cause)}; a new one was started: variables and imports from before are gone.`;
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
          const note = `The sandbox of this conversation ${gonePhrase(e2)}; a new one was created: files and Python state from before are gone.`;
          return { value: await fn(rec.sandboxId!), record: rec, note };
        }
        throw e;
      }
    });
  }
}
