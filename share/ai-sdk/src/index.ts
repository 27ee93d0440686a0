export { SandgateClient, type SandgateClientOptions, type ExecuteOptions } from './client.js';
export {
  SandgateError,
  NetworkRefusedError,
  InvalidNetworkError,
  KernelspecMissingError,
  isSandgateError,
  GONE_REASONS,
} from './errors.js';
export { LANGUAGES, DEFAULT_KERNELSPECS, LANGUAGE_NAMES, type Language } from './languages.js';
export type { ExecuteCallbacks } from './execution.js';
export { Sandgate, type SandgateOptions, type RunCodeOptions, type SessionCall } from './sandgate.js';
export {
  InMemorySessionStore,
  InMemoryDisplayStore,
  defaultSessionStore,
  defaultDisplayStore,
  type SessionStore,
  type SessionRecord,
  type DisplayStore,
  type StoredDisplay,
} from './stores.js';
export {
  createSandgateTools,
  type SandgateToolsOptions,
  type RunCodeOutput,
  type RunShellOutput,
  type DisplayRef,
  type OutputEvent,
  egressNote,
} from './tools.js';
export { stripAnsi, trimMiddle } from './text.js';
export type * from './types.js';
