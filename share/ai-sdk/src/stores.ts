// Where a conversation's sandbox and kernel ids live, and where display
// bundles wait for the UI. Both are interfaces so that a deployment with
// several server processes can keep them in Redis or Postgres; the in-memory
// defaults are shared by everything in one process.
import type { Language } from './languages.js';
import type { Network } from './types.js';

/** What the tools remember about one conversation: ids only, never objects. */
export interface SessionRecord {
  /** The conversation's sandbox; null when the tools run without the sandbox API (`sandbox: false`). */
  sandboxId: string | null;
  /** The conversation's kernels by language (`python`, `javascript`, ...), each started on first use. */
  kernels: Partial<Record<Language, string>>;
  /** The network `setNetwork` gave the conversation; a sandbox made again for it gets the same. */
  network?: Network;
}

/**
 * Maps a conversation id to its sandbox and kernel ids.
 *
 * Every method may be async. `set` overwrites; `delete` forgets. Values are
 * small JSON objects, so any key-value store serves:
 *
 * ```ts
 * // Redis (ioredis / node-redis), one key per conversation, expiring with the sandbox's TTL:
 * const redisStore: SessionStore = {
 *   async get(id) { const v = await redis.get(`sandgate:${id}`); return v ? JSON.parse(v) : undefined; },
 *   async set(id, rec) { await redis.set(`sandgate:${id}`, JSON.stringify(rec), 'EX', 86400); },
 *   async delete(id) { await redis.del(`sandgate:${id}`); },
 * };
 *
 * // Postgres: CREATE TABLE sandgate_sessions (id text PRIMARY KEY, record jsonb NOT NULL);
 * const pgStore: SessionStore = {
 *   async get(id) {
 *     const r = await pool.query('SELECT record FROM sandgate_sessions WHERE id = $1', [id]);
 *     return r.rows[0]?.record;
 *   },
 *   async set(id, rec) {
 *     await pool.query(
 *       `INSERT INTO sandgate_sessions VALUES ($1, $2)
 *        ON CONFLICT (id) DO UPDATE SET record = $2`, [id, JSON.stringify(rec)]);
 *   },
 *   async delete(id) { await pool.query('DELETE FROM sandgate_sessions WHERE id = $1', [id]); },
 * };
 * ```
 *
 * A stale record is harmless: when its sandbox or kernel is gone (404) the
 * tools create new ones and overwrite it.
 */
export interface SessionStore {
  get(sessionId: string): Promise<SessionRecord | undefined> | SessionRecord | undefined;
  set(sessionId: string, record: SessionRecord): Promise<void> | void;
  delete(sessionId: string): Promise<void> | void;
}

/** A Map, bounded: the least recently used conversations are forgotten past `maxSessions`. */
export class InMemorySessionStore implements SessionStore {
  private readonly map = new Map<string, SessionRecord>();

  constructor(private readonly maxSessions = 10_000) {}

  get(sessionId: string): SessionRecord | undefined {
    const r = this.map.get(sessionId);
    if (r) {
      this.map.delete(sessionId);
      this.map.set(sessionId, r);
    }
    return r ? structuredClone(r) : undefined;
  }

  set(sessionId: string, record: SessionRecord): void {
    this.map.delete(sessionId);
    this.map.set(sessionId, structuredClone(record));
    while (this.map.size > this.maxSessions) this.map.delete(this.map.keys().next().value!);
  }

  delete(sessionId: string): void {
    this.map.delete(sessionId);
  }
}

/** A rich output kept out of the model's context: the MIME bundle as the kernel sent it. */
export interface StoredDisplay {
  /** MIME type → data (base64 for images, text for HTML/SVG, JSON for application/json). */
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  /** The conversation it came from. */
  sessionId: string;
}

/** Where display bundles wait until the UI asks for them by id. */
export interface DisplayStore {
  put(id: string, display: StoredDisplay): Promise<void> | void;
  get(id: string): Promise<StoredDisplay | undefined> | StoredDisplay | undefined;
}

/** Bounded by count and bytes; the oldest displays go first. */
export class InMemoryDisplayStore implements DisplayStore {
  private readonly map = new Map<string, { display: StoredDisplay; bytes: number }>();
  private bytes = 0;

  constructor(
    private readonly maxDisplays = 1000,
    private readonly maxBytes = 256 * 1024 * 1024
  ) {}

  put(id: string, display: StoredDisplay): void {
    let bytes = 0;
    for (const v of Object.values(display.data)) bytes += typeof v === 'string' ? v.length : JSON.stringify(v ?? null).length;
    this.map.set(id, { display, bytes });
    this.bytes += bytes;
    while (this.map.size > this.maxDisplays || (this.bytes > this.maxBytes && this.map.size > 1)) {
      const [oldest, entry] = this.map.entries().next().value!;
      this.map.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  get(id: string): StoredDisplay | undefined {
    return this.map.get(id)?.display;
  }
}

/** The process-wide defaults, shared by every `Sandgate` and tool set that is given no store. */
export const defaultSessionStore = new InMemorySessionStore();
export const defaultDisplayStore = new InMemoryDisplayStore();
