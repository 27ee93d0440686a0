// createSandgateSandbox: the harness's sandbox provider over Sandgate. A
// session is a sandbox (POST /api/sandboxes) whose metadata holds the
// harness's session id and identity, so that resumeSession finds it again by
// listing sandboxes (GET /api/sandboxes?metadata.KEY=VALUE), from any process.
import type { HarnessV1NetworkPolicy, HarnessV1SandboxProvider } from '@ai-sdk/harness';
import type { Experimental_SandboxSession as SandboxSession } from 'ai';
import { SandgateClient, type SandgateClientOptions } from '../client.js';
import { SandgateError } from '../errors.js';
import type { CreateSandboxRequest, Network, Sandbox, SandboxLimits } from '../types.js';
import { isHarnessPolicy, toSandgateNetwork } from './network.js';
import { SandgateSandboxSession, type SandgateSessionSettings } from './session.js';

/** Metadata key holding the harness's session id. */
export const SESSION_ID_METADATA = 'harness_session_id';
/** Metadata key holding the harness's identity of the sandbox's setup. */
export const IDENTITY_METADATA = 'harness_identity';
const MAX_METADATA_VALUE_BYTES = 256;

export interface SandgateSandboxOptions extends Omit<SandgateClientOptions, 'executeTransport'>, SandgateSessionSettings {
  /** A client to use instead of one built from `url`, `token` and `fetch`. */
  client?: SandgateClient;
  /** Seconds each sandbox lives (the operator's default and maximum when absent). */
  ttlS?: number;
  /** Seconds without activity after which the gateway ends a sandbox. */
  idleTimeoutS?: number;
  /** The network a sandbox starts with: a harness policy or a Sandgate network (`none` by default). */
  network?: HarnessV1NetworkPolicy | Network;
  /** Metadata every sandbox carries, besides the session id and identity. */
  metadata?: Record<string, string>;
  /** Limits below the operator's (memory, cpu, pids, workspace bytes). */
  limits?: SandboxLimits;
  /** Environment of every process in the sandbox. */
  env?: Record<string, string>;
}

export interface SandgateSandboxProvider extends HarnessV1SandboxProvider {
  readonly providerId: 'sandgate';
  readonly createSession: (options?: Parameters<HarnessV1SandboxProvider['createSession']>[0]) => Promise<SandgateSandboxSession>;
  readonly resumeSession: (options: { sessionId: string; abortSignal?: AbortSignal }) => Promise<SandgateSandboxSession>;
}

function metadataValue(what: string, value: string): string {
  if (new TextEncoder().encode(value).byteLength > MAX_METADATA_VALUE_BYTES)
    throw new SandgateError(400, 'invalid_metadata', `${what} is longer than the ${MAX_METADATA_VALUE_BYTES} bytes a sandbox's metadata value holds`);
  return value;
}

/** A refused token (401, or 403 other than a network refusal) as the harness's HarnessSandboxAuthenticationError. */
async function authError(e: unknown): Promise<unknown> {
  if (!(e instanceof SandgateError) || !(e.status === 401 || (e.status === 403 && e.reason !== 'network_refused'))) return e;
  const { HarnessSandboxAuthenticationError } = await import('@ai-sdk/harness');
  return new HarnessSandboxAuthenticationError({
    message: `Sandgate refused the token (${e.status} ${e.reason}: ${e.message}); pass the gateway's token as \`token\`.`,
    sandboxProviderId: 'sandgate',
    cause: e,
  });
}

async function withAuth<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw await authError(e);
  }
}

/** The harness sandbox provider of a Sandgate gateway. No I/O until a session is made. */
export function createSandgateSandbox(options: SandgateSandboxOptions): SandgateSandboxProvider {
  const client = options.client ?? new SandgateClient(options);
  const settings: SandgateSessionSettings = {
    ...(options.ports ? { ports: options.ports } : {}),
    ...(options.portRoute ? { portRoute: options.portRoute } : {}),
    ...(options.portUrlTtlS !== undefined ? { portUrlTtlS: options.portUrlTtlS } : {}),
    ...(options.networkOptions ? { networkOptions: options.networkOptions } : {}),
  };
  const network = isHarnessPolicy(options.network) ? toSandgateNetwork(options.network, options.networkOptions) : options.network;
  const sessionOf = (sandbox: Sandbox) => new SandgateSandboxSession(client, sandbox, settings);

  return {
    specificationVersion: 'harness-sandbox-v1',
    providerId: 'sandgate',

    /**
     * Makes a sandbox. `onFirstCreate` runs on it (the files-and-processes
     * view) before it is returned; a sandbox whose setup failed is deleted.
     */
    createSession: ({ sessionId, identity, onFirstCreate, abortSignal } = {}) =>
      withAuth(async () => {
        abortSignal?.throwIfAborted();
        const metadata: Record<string, string> = { ...options.metadata };
        if (sessionId !== undefined) metadata[SESSION_ID_METADATA] = metadataValue('sessionId', sessionId);
        if (identity !== undefined) metadata[IDENTITY_METADATA] = metadataValue('identity', identity);
        const body: CreateSandboxRequest = { metadata };
        if (options.ttlS !== undefined) body.ttl_s = options.ttlS;
        if (options.idleTimeoutS !== undefined) body.idle_timeout_s = options.idleTimeoutS;
        if (network !== undefined) body.network = network;
        if (options.limits) body.limits = options.limits;
        if (options.env) body.env = options.env;
        const session = sessionOf(await client.createSandbox(body));
        try {
          abortSignal?.throwIfAborted();
          if (onFirstCreate) await onFirstCreate(session.restricted() as SandboxSession, { abortSignal });
        } catch (e) {
          await session.destroy().catch(() => {});
          throw e;
        }
        return session;
      }),

    /** The newest live sandbox made for `sessionId`; a SandgateError (404) when there is none. */
    resumeSession: ({ sessionId, abortSignal }) =>
      withAuth(async () => {
        abortSignal?.throwIfAborted();
        const found = await client.listSandboxes({ [SESSION_ID_METADATA]: metadataValue('sessionId', sessionId) });
        const newest = found.sort((a, b) => b.created.localeCompare(a.created))[0];
        if (!newest)
          throw new SandgateError(404, 'not_found', `No sandbox of session ${JSON.stringify(sessionId)}: it has ended (expired, deleted) or was never made`);
        const session = sessionOf(newest);
        await session.refreshPorts(abortSignal);
        return session;
      }),
  };
}
