export { SandgateClient, type SandgateClientOptions, type ExecuteOptions } from './client.js';
export { SandgateError, isSandgateError, GONE_REASONS } from './errors.js';
export type { ExecuteCallbacks } from './execution.js';
export { Sandgate, type SandgateOptions, type SessionCall } from './sandgate.js';
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
  type RunPythonOutput,
  type RunShellOutput,
  type DisplayRef,
  type OutputEvent,
} from './tools.js';
export { stripAnsi, trimMiddle } from './text.js';
export type * from './types.js';
