// The gateway's JSON, as docs/api.md defines it. Objects the gateway sends or
// takes keep its snake_case names; options that only this client knows
// (callbacks, signals) are camelCase.

export type JsonObject = { [key: string]: unknown };

/** Limits of a sandbox; absent fields take the default policy's value. */
export interface SandboxLimits {
  memory_bytes?: number;
  cpu?: number;
  pids?: number;
  workspace_bytes?: number;
}

/** Network modes, each allowing everything the ones before it do. */
export type NetworkMode = 'none' | 'loopback' | 'allow' | 'open';

/**
 * An egress allow-list (docs/policy.md "Network and egress"). Programs in the
 * sandbox reach the hosts it names through a proxy outside the sandbox
 * (`HTTP_PROXY`/`HTTPS_PROXY` are set); anything else gets an HTTP 403 from
 * the proxy naming the host and the reason.
 */
export interface NetworkPolicy {
  mode: NetworkMode;
  /** Names a request may name; `*.example.com` matches every name below example.com. */
  hosts?: string[];
  /** `ADDR/PREFIX` (or bare addresses) an IP literal may name, and refused ranges a name may resolve to. */
  cidrs?: string[];
  /** Ports a request may name (default `[80, 443]`). */
  ports?: number[];
  /** Ports (of `ports`) whose CONNECT tunnels may carry another protocol than TLS (SSH, SMTP). */
  non_tls_ports?: number[];
  max_connections?: number;
  bytes_per_second?: number;
}

/**
 * A sandbox's network: a bare mode or an allow-list. It must lie within the
 * operator's `network_ceiling` (a `NetworkRefusedError` otherwise).
 */
export type Network = NetworkMode | NetworkPolicy;

/** Body of `POST /api/sandboxes`; every field is optional. */
export interface CreateSandboxRequest {
  ttl_s?: number;
  idle_timeout_s?: number;
  /** String values, at most 64 keys of 256 bytes each. */
  metadata?: Record<string, string>;
  limits?: SandboxLimits;
  /** The sandbox's network (`none` unless the operator's default says otherwise). */
  network?: Network;
  /** Added to the environment of every kernel and command in the sandbox. */
  env?: Record<string, string>;
}

/** A kernel model, as `GET /api/kernels/{id}` answers. */
export interface KernelModel {
  id: string;
  name: string;
  last_activity: string;
  execution_state: string;
  connections: number;
  /** Present on gateways with the Sandgate API. */
  sandbox_id?: string;
}

export interface Sandbox {
  id: string;
  created: string;
  expires_at: string;
  idle_timeout_s: number;
  last_activity: string;
  metadata: Record<string, string>;
  limits: Required<SandboxLimits>;
  max_execution_s?: number;
  /** The policy in force: a bare mode as a string, egress as the full object. */
  network: Network;
  kernels: KernelModel[];
}

/** Body of `POST /api/kernels`. */
export interface StartKernelRequest {
  /** Kernelspec name; the gateway's default when absent. */
  name?: string;
  /** Starts the kernel in this sandbox; without it the kernel gets a sandbox of its own. */
  sandbox_id?: string;
  env?: Record<string, string>;
}

/** A kernelspec, as `GET /api/kernelspecs` lists it. */
export interface KernelspecModel {
  name: string;
  spec: { language: string; display_name: string; [key: string]: unknown };
  resources: Record<string, string>;
}

/** `GET /api/kernelspecs`. */
export interface KernelspecList {
  default: string;
  kernelspecs: Record<string, KernelspecModel>;
}

/** An entry of a directory listing under `/api/sandboxes/{id}/files`. */
export interface FileEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mtime: string;
}

/** `201` answer of a file upload. */
export interface UploadedFile {
  path: string;
  size: number;
}

/** Body of `POST /api/sandboxes/{id}/commands`. */
export interface CommandRequest {
  /** A string runs with `bash -lc`; an array runs as argv. */
  cmd: string | string[];
  /** Relative to the workspace. */
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  timeout_s?: number;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
  /** null when a signal ended the command. */
  exit_code: number | null;
  signal: number | null;
  timed_out: boolean;
  duration_ms: number;
  truncated: boolean;
  /** Why the sandbox ended while the command ran (`deleted`, `expired`, `culled`, `ended`); it then answered at once. */
  sandbox_ended?: string | null;
}

/** A display_data or execute_result bundle, as the kernel sent it. */
export interface OutputBundle {
  output_type: 'display_data' | 'execute_result' | 'update_display_data';
  data: Record<string, unknown>;
  metadata: JsonObject;
  /** display_id of the transient part, when the kernel gave one. */
  display_id?: string;
}

export interface ExecuteError {
  ename: string;
  evalue: string;
  traceback: string[];
}

/**
 * The record of one execution: the answer of `POST /api/kernels/{id}/execute`,
 * and what `SandgateClient.execute` builds over the WebSocket.
 */
export interface ExecuteResult {
  msg_id: string;
  /** `running` only from `getExecution` while the code runs. */
  status: 'ok' | 'error' | 'timeout' | 'running';
  execution_count: number | null;
  stdout: string;
  stderr: string;
  /** The execute_result's text/plain. */
  result: string | null;
  outputs: OutputBundle[];
  error: ExecuteError | null;
  timed_out: boolean;
  kernel_restarted: boolean;
  duration_ms: number;
  /** Why the sandbox ended while the code ran (`deleted`, `expired`, `culled`, `ended`); error `SandboxEnded`. */
  sandbox_ended?: string | null;
  /** Set by this client when it dropped output past its cap (WebSocket path). */
  truncated?: boolean;
}
