// @sandgate/ai-sdk/sandbox: a Sandgate sandbox as an AI SDK 7 sandbox session
// (`experimental_sandbox` of generateText, streamText, ToolLoopAgent and
// runAgentTUI) and as the harness's sandbox provider. ai 7 only: the main
// entry (`@sandgate/ai-sdk`) stays usable with ai 6.
export { createSandgateSandbox, SESSION_ID_METADATA, IDENTITY_METADATA, type SandgateSandboxOptions, type SandgateSandboxProvider } from './provider.js';
export { SandgateSandboxSession, type SandgateSessionSettings } from './session.js';
export { SandgateProcess, exitCodeOf } from './process.js';
export { toSandgateNetwork, describeNetwork, type SandgateNetworkOptions } from './network.js';
