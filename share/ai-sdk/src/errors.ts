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

/**
 * The gateway refused a network policy (`403 network_refused`): it asks for more
 * than the operator's ceiling. `what` and `value` name what is above it, as the
 * gateway's message does (`host x.example`, `port 8080`, `mode "open"`, ...).
 */
export class NetworkRefusedError extends SandgateError {
  /** `host`, `cidr`, `port`, `non_tls_ports`, `mode`, `max_connections` or `bytes_per_second`; undefined when the message names none. */
  readonly what: string | undefined;
  /** The host, cidr, port, mode or limit that is above the ceiling. */
  readonly value: string | undefined;

  constructor(message: string, request?: string, options?: { cause?: unknown }) {
    super(403, 'network_refused', message, request, options);
    this.name = 'NetworkRefusedError';
    const m = /^network: (host|cidr|port|non_tls_ports|network mode|max_connections|bytes_per_second) "?([^"\s]+)"? is outside/.exec(message);
    this.what = m ? (m[1] === 'network mode' ? 'mode' : m[1]) : undefined;
    this.value = m?.[2];
  }

  /** The host above the ceiling, when that is what the gateway named. */
  get host(): string | undefined {
    return this.what === 'host' ? this.value : undefined;
  }
}

/** The gateway found a network policy malformed (400); the message names the field. */
export class InvalidNetworkError extends SandgateError {
  constructor(message: string, request?: string, options?: { cause?: unknown }) {
    super(400, 'invalid_network', message, request, options);
    this.name = 'InvalidNetworkError';
  }
}

/**
 * The typed form of an error answering a request that carried a network
 * policy: 403 `network_refused` and, when `wholeBodyIsNetwork` (PATCH .../network)
 * or the message is about `network`, 400. Anything else is returned as it is.
 */
export function networkError(e: unknown, wholeBodyIsNetwork: boolean): unknown {
  if (!(e instanceof SandgateError)) return e;
  if (e.status === 403 && e.reason === 'network_refused') return new NetworkRefusedError(e.message, e.request, { cause: e });
  if (e.status === 400 && (wholeBodyIsNetwork || /^network\b/.test(e.message))) return new InvalidNetworkError(e.message, e.request, { cause: e });
  return e;
}

/** A language whose kernelspec the gateway does not have. */
export class KernelspecMissingError extends SandgateError {
  constructor(
    /** The kernelspec that was asked for. */
    readonly kernelspec: string,
    /** The language it was to run. */
    readonly language: string,
    /** The kernelspecs the gateway has. */
    readonly available: string[],
    request?: string
  ) {
    super(
      404,
      'no_kernelspec',
      `This gateway has no kernelspec "${kernelspec}", so ${language} code cannot run here ` +
        `(its kernelspecs: ${available.join(', ') || 'none'}). Use another language.`,
      request
    );
    this.name = 'KernelspecMissingError';
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
