// The error every gateway failure becomes: the HTTP status and the gateway's
// JSON {reason, message}, plus what was asked.

/** Reasons with which the gateway answers 404 for an id that existed once. */
export const GONE_REASONS = ['expired', 'culled', 'deleted'] as const;

export class SandgateError extends Error {
  /** HTTP status; 0 when the gateway was not reached or the WebSocket failed. */
  readonly status: number;
  /** The gateway's `reason` (`expired`, `culled`, `deleted`, `Not Found`, ...), or a local one. */
  readonly reason: string;
  /** `METHOD path` of the request that failed, when there was one. */
  readonly request: string | undefined;

  constructor(status: number, reason: string, message: string, request?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandgateError';
    this.status = status;
    this.reason = reason;
    this.request = request;
  }

  /** 404: the id is unknown, or what it named has expired, been culled or deleted. */
  get isNotFound(): boolean {
    return this.status === 404;
  }

  /** 404 with `expired`, `culled` or `deleted`: the id was valid once. */
  get isGone(): boolean {
    return this.status === 404 && (GONE_REASONS as readonly string[]).includes(this.reason);
  }

  /** A deadline that this client enforced passed (connect, reply). */
  get isTimeout(): boolean {
    return this.reason === 'client_timeout';
  }
}

export function isSandgateError(e: unknown): e is SandgateError {
  return e instanceof SandgateError;
}

/** Builds a SandgateError from an HTTP response whose status is not 2xx. */
export async function errorFromResponse(res: Response, request: string): Promise<SandgateError> {
  const text = await res.text().catch(() => '');
  let reason = res.statusText || String(res.status);
  let message = text.slice(0, 2000) || `${request}: HTTP ${res.status}`;
  try {
    const body = JSON.parse(text) as { reason?: unknown; message?: unknown };
    if (typeof body.reason === 'string' && body.reason) reason = body.reason;
    if (typeof body.message === 'string' && body.message) message = body.message;
  } catch {
    // not JSON: keep the text
  }
  return new SandgateError(res.status, reason, message, request);
}
