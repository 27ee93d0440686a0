// The AI SDK tools: runCode (a persistent kernel per language per
// conversation) and runShell (commands in the same sandbox). Built with
// tool(), inputSchema, execute and toModelOutput only, which ai 6 and 7 share.
import * as ai from 'ai';
import { tool, type JSONValue } from 'ai';
import { z } from 'zod';
import { LANGUAGES, isLanguage, type Language } from './languages.js';
import { Sandgate, type SandgateOptions } from './sandgate.js';
import { stripAnsi, trimHead, trimMiddle } from './text.js';
import type { ExecuteResult, OutputBundle } from './types.js';

export interface SandgateToolsOptions extends SandgateOptions {
  /** The conversation: every call with the same id shares one kernel and one sandbox. */
  sessionId: string;
  /** The languages runCode offers (default all: python, javascript, typescript, r, bash). */
  languages?: readonly Language[];
  /** Characters of stdout, stderr and result each that reach the model (default 10000). */
  maxOutputChars?: number;
  /** Characters of a traceback that reach the model, from its end (default 4000). */
  maxTracebackChars?: number;
  /** Timeout of runCode when the model gives none, in seconds (default 120). */
  defaultTimeoutS?: number;
  /** Timeout of runShell when the model gives none, in seconds (default 60). */
  defaultShellTimeoutS?: number;
  /** Largest timeout the model may ask for, in seconds (default 600). */
  maxTimeoutS?: number;
  /** Hand PNG displays to the model as file parts (for multimodal models). Off by default. */
  imagesToModel?: boolean;
  /** At most this many PNGs per call reach the model when imagesToModel is on (default 4). */
  maxImagesToModel?: number;
  /** Streams output as it arrives (e.g. into a UI data stream); makes runCode use the WebSocket. */
  onOutput?: (event: OutputEvent) => void;
  /** A Sandgate to share (its store, displays and client) instead of one built from these options. */
  sandgate?: Sandgate;
  /**
   * Prints each execution to the terminal (console.log): the code or command,
   * then its stdout, stderr, result and error as the tool returns them. A
   * function receives each block of text instead.
   */
  debug?: boolean | ((text: string) => void);
}

export type OutputEvent =
  | { sessionId: string; toolCallId: string; type: 'stdout' | 'stderr'; text: string }
  | { sessionId: string; toolCallId: string; type: 'display'; mimeTypes: string[] };

/** A display kept out of the model's context; the UI fetches it with getDisplay(id). */
export interface DisplayRef {
  id: string;
  mimeTypes: string[];
  /** Its text/plain form, when it has one (trimmed). */
  text?: string;
}

export interface RunCodeOutput {
  /** The language (and so the kernel) the code ran in. */
  language: Language;
  stdout: string;
  stderr: string;
  /** text/plain of the value of the last expression. */
  result: string | null;
  error: { name: string; value: string; traceback: string } | null;
  displays: DisplayRef[];
  /** Some output was cut to fit the model's context (a marker shows where). */
  truncated: boolean;
  timedOut: boolean;
  /**
   * Set when the conversation's kernel or sandbox had to be created again, or
   * when the sandbox's network policy refused a host.
   */
  note?: string;
}

export interface RunShellOutput {
  stdout: string;
  stderr: string;
  /** null when a signal ended the command. */
  exitCode: number | null;
  timedOut: boolean;
  truncated: boolean;
  note?: string;
}

const TEXT_TYPES = new Set(['text/plain']);
/** The forms IRkernel gives a value it prints (as display_data, not execute_result). */
const R_VALUE_TYPES = new Set(['text/plain', 'text/html', 'text/markdown', 'text/latex']);

/**
 * A value R printed at top level: IRkernel sends each visible value as
 * display_data in text forms only, never an execute_result. Its text/plain is
 * the `result`, as the R console would print it.
 */
function isRValue(bundle: OutputBundle, language: Language): boolean {
  return (
    language === 'r' &&
    bundle.output_type === 'display_data' &&
    typeof bundle.data['text/plain'] === 'string' &&
    Object.keys(bundle.data).every((m) => R_VALUE_TYPES.has(m))
  );
}

/** Whether a bundle goes to the user as a display. */
function isDisplay(bundle: OutputBundle, language: Language): boolean {
  // A result that is only text is `result`; one with HTML or an image is a display as well.
  if (bundle.output_type === 'execute_result') return !Object.keys(bundle.data).every((m) => TEXT_TYPES.has(m));
  // An R value is a display only when it is a table (a data.frame, a matrix), as a pandas DataFrame is.
  if (isRValue(bundle, language)) return /<table\b/i.test(String(bundle.data['text/html'] ?? ''));
  return true;
}

/** What the tool descriptions tell the model about the network. */
const NETWORK_HELP =
  'Network: the sandbox may have none. When the application allows some hosts, programs reach them ' +
  'through the HTTP(S) proxy named in HTTP_PROXY/HTTPS_PROXY (curl, pip, npm, git and Python\'s ' +
  'urllib/requests use it by themselves). A host that is not allowed is answered by that proxy with ' +
  'HTTP 403 and "sandgate-egress: refused HOST:PORT: reason" (for HTTPS: "Tunnel connection failed: 403"): ' +
  'then the host is not allowed; do not retry it and do not try other hosts, mirrors or IP addresses, ' +
  'tell the user which host you need (the application can allow it). A TLS "alert access denied" ' +
  'through the proxy means the same for the server name the program sent in TLS. "Connection refused" or ' +
  '"network unreachable" means no route: the sandbox has no network, or the program does not use the ' +
  'proxy (Node\'s fetch does not; curl does). When egress was opened while a kernel ran, new processes ' +
  'get the proxy at once, but a program that read its proxy settings before keeps connecting directly ' +
  '(Python\'s urllib.request.urlopen caches them at its first call): restart that kernel, or build a ' +
  'new one (urllib.request.install_opener(urllib.request.build_opener())), which reads the environment again.';

// The body of the egress proxy's refusals, as curl prints it.
const EGRESS_REFUSAL = /sandgate-egress: refused (\[[^\]\s]+\]|[^\s:]+):(\d+): ([^\r\n]*)/g;

/** A note for the model when output shows the egress proxy refusing a host. */
export function egressNote(...texts: string[]): string | undefined {
  const refused = new Set<string>();
  for (const text of texts) for (const m of text.matchAll(EGRESS_REFUSAL)) refused.add(`${m[1]}:${m[2]} (${m[3]!.trim()})`);
  if (refused.size === 0) return undefined;
  return (
    `The sandbox's network policy refused ${[...refused].join('; ')}. Do not retry it and do not try ` +
    'other hosts or addresses; tell the user which host you need (the application can allow it).'
  );
}

/** What the model should know when the sandbox ended under a call (`sandbox_ended` of its result). */
export function sandboxEndedNote(reason: string | null | undefined): string | undefined {
  if (!reason) return undefined;
  return (
    `The sandbox ended while this ran (${reason}): its processes, variables and files are gone. ` +
    'A new call starts in a new sandbox; say so to the user before redoing earlier steps.'
  );
}

/** Prints one execution's parts (empty ones left out) under a header naming the tool and call. */
function debugPrinter(debug: SandgateToolsOptions['debug']) {
  if (!debug) return undefined;
  const print = typeof debug === 'function' ? debug : (text: string) => console.log(text);
  return (header: string, parts: Record<string, string | null | undefined>) => {
    const lines = [`[sandgate] ${header}`];
    for (const [name, text] of Object.entries(parts)) if (text) lines.push(`  ${name}:`, ...text.replace(/\n$/, '').split('\n').map((l) => `    ${l}`));
    print(lines.join('\n'));
  };
}

function joinNotes(...notes: Array<string | undefined>): string | undefined {
  const kept = notes.filter((n): n is string => !!n);
  return kept.length ? kept.join(' ') : undefined;
}

/** The description of runCode for the languages it offers. */
function runCodeDescription(languages: readonly Language[]): string {
  const charts: string[] = [];
  if (languages.includes('python')) charts.push('matplotlib in Python');
  if (languages.includes('javascript') || languages.includes('typescript'))
    charts.push('display.png(buffer), display.svg(text), display.html(text) in JavaScript/TypeScript');
  if (languages.includes('r')) charts.push('ggplot2 or base plots in R');
  return (
    `Run code in a persistent, sandboxed Jupyter kernel. \`language\` picks the kernel: ${languages.join(', ')} ` +
    `(default ${languages[0]}). Each language has its own kernel in this conversation, started on first use; ` +
    'its variables, imports and definitions persist between calls in that language (not across languages). ' +
    'Every kernel and runShell share the files under /workspace: pass data between languages through files. ' +
    'The value of the last expression comes back as `result`, printed text as `stdout`. ' +
    (charts.length ? `Charts (${charts.join('; ')}) and HTML are shown to the user and listed in \`displays\`, not returned to you. ` : '') +
    NETWORK_HELP
  );
}

/**
 * How an image goes to the model in a tool result. ai 7 (the release that
 * added uploadFile and provider file references) takes
 * `{ type: 'file', mediaType, data: { type: 'data', data } }` and warns that
 * ai 6's `{ type: 'file-data', data, mediaType }` is deprecated; ai 6 knows
 * only the latter.
 */
const TAGGED_FILE_PARTS = typeof (ai as unknown as Record<string, unknown>).uploadFile === 'function';

function imagePart(data: string, mediaType: string): Record<string, unknown> {
  return TAGGED_FILE_PARTS ? { type: 'file', mediaType, data: { type: 'data', data } } : { type: 'file-data', data, mediaType };
}

/** toModelOutput's content form, typed as the part both versions share (the image parts are per version). */
type ContentOutput = { type: 'content'; value: Array<{ type: 'text'; text: string }> };

function toBase64(data: unknown): string | undefined {
  if (typeof data === 'string') return data.replace(/\s+/g, '');
  return undefined;
}

export function createSandgateTools(options: SandgateToolsOptions) {
  const sandgate = options.sandgate ?? new Sandgate(options);
  const { sessionId } = options;
  const maxChars = options.maxOutputChars ?? 10_000;
  const maxTraceback = options.maxTracebackChars ?? 4_000;
  const maxTimeoutS = options.maxTimeoutS ?? 600;
  const defaultTimeoutS = Math.min(options.defaultTimeoutS ?? 120, maxTimeoutS);
  const defaultShellTimeoutS = Math.min(options.defaultShellTimeoutS ?? 60, maxTimeoutS);
  const maxImages = options.maxImagesToModel ?? 4;
  const debug = debugPrinter(options.debug);
  const languages = options.languages?.length ? [...new Set(options.languages)] : [...LANGUAGES];
  for (const l of languages) if (!isLanguage(l)) throw new TypeError(`languages: ${JSON.stringify(l)} is not one of ${LANGUAGES.join(', ')}`);
  // The default language comes first: python when offered.
  if (languages.includes('python')) languages.sort((a, b) => (a === 'python' ? -1 : b === 'python' ? 1 : 0));

  async function keepDisplay(bundle: OutputBundle): Promise<DisplayRef> {
    const id = globalThis.crypto.randomUUID();
    await sandgate.displays.put(id, { data: bundle.data, metadata: bundle.metadata, sessionId });
    const ref: DisplayRef = { id, mimeTypes: Object.keys(bundle.data) };
    const text = bundle.data['text/plain'];
    if (typeof text === 'string') ref.text = trimMiddle(text, 1000).text;
    return ref;
  }

  async function shape(r: ExecuteResult, language: Language, timeoutS: number, note: string | undefined): Promise<RunCodeOutput> {
    let truncated = !!r.truncated;
    const cut = (text: string) => {
      const t = trimMiddle(stripAnsi(text), maxChars);
      truncated ||= t.trimmed;
      return t.text;
    };
    const displays: DisplayRef[] = [];
    for (const bundle of r.outputs) if (isDisplay(bundle, language)) displays.push(await keepDisplay(bundle));
    const rValues = r.outputs.filter((b) => isRValue(b, language)).map((b) => String(b.data['text/plain']));
    const result = rValues.length ? rValues.join('\n') : r.result;
    let error: RunCodeOutput['error'] = null;
    if (r.timed_out) {
      error = {
        name: 'TimeoutError',
        value: r.kernel_restarted
          ? `The code ran over ${timeoutS} s and did not stop when interrupted, so the kernel was restarted: all variables are lost.`
          : `The code ran over ${timeoutS} s and was interrupted; variables defined before are kept.`,
        traceback: '',
      };
    } else if (r.error) {
      const tb = trimHead(stripAnsi(r.error.traceback.join('\n')), maxTraceback);
      truncated ||= tb.trimmed;
      error = { name: r.error.ename, value: cut(r.error.evalue), traceback: tb.text };
    }
    const out: RunCodeOutput = {
      language,
      stdout: cut(r.stdout),
      stderr: cut(r.stderr),
      result: result === null ? null : cut(result),
      error,
      displays,
      truncated,
      timedOut: r.timed_out,
    };
    const notes = joinNotes(
      note,
      sandboxEndedNote(r.sandbox_ended),
      egressNote(r.stdout, r.stderr, r.error ? r.error.evalue + '\n' + r.error.traceback.join('\n') : ''),
    );
    if (notes) out.note = notes;
    return out;
  }

  const runCode = tool({
    description: runCodeDescription(languages),
    inputSchema: z.object({
      code: z.string().describe('The code to run, in the language given'),
      language: z
        .enum(languages as [Language, ...Language[]])
        .optional()
        .describe(`The language of the code, and so the kernel it runs in (default ${languages[0]})`),
      timeoutS: z
        .number()
        .positive()
        .max(maxTimeoutS)
        .optional()
        .describe(`Seconds before the code is interrupted (default ${defaultTimeoutS}); variables survive an interrupt`),
    }),
    execute: async ({ code, language, timeoutS }, { abortSignal, toolCallId }): Promise<RunCodeOutput> => {
      const t = Math.min(timeoutS ?? defaultTimeoutS, maxTimeoutS);
      const lang = language ?? languages[0]!;
      const emit = options.onOutput;
      debug?.(`runCode ${lang} (${toolCallId}) runs`, { code });
      try {
        const { value, note } = await sandgate.runCode(sessionId, code, {
          language: lang,
          timeoutS: t,
          signal: abortSignal,
          ...(emit
            ? {
                onStdout: (text: string) => emit({ sessionId, toolCallId, type: 'stdout', text }),
                onStderr: (text: string) => emit({ sessionId, toolCallId, type: 'stderr', text }),
                onDisplay: (b: OutputBundle) => emit({ sessionId, toolCallId, type: 'display', mimeTypes: Object.keys(b.data) }),
              }
            : {}),
        });
        const out = await shape(value, lang, t, note);
        debug?.(`runCode ${lang} (${toolCallId}) ended`, {
          stdout: out.stdout,
          stderr: out.stderr,
          result: out.result,
          error: out.error && `${out.error.name}: ${out.error.value}${out.error.traceback ? '\n' + out.error.traceback : ''}`,
          displays: out.displays.map((d) => `${d.id} (${d.mimeTypes.join(', ')})`).join('\n'),
          note: out.note,
        });
        return out;
      } catch (e) {
        debug?.(`runCode ${lang} (${toolCallId}) failed`, { error: String(e) });
        throw e;
      }
    },
    toModelOutput: async ({ output }) => {
      if (!options.imagesToModel) return { type: 'json', value: output as unknown as JSONValue };
      const parts: Array<Record<string, unknown>> = [{ type: 'text', text: JSON.stringify(output) }];
      for (const d of output.displays.filter((d) => d.mimeTypes.includes('image/png')).slice(0, maxImages)) {
        const stored = await sandgate.displays.get(d.id);
        const data = toBase64(stored?.data['image/png']);
        if (data) parts.push(imagePart(data, 'image/png'));
      }
      return { type: 'content', value: parts } as unknown as ContentOutput;
    },
  });

  const runShell = tool({
    description:
      'Run a shell command (bash -lc, a new process each call) in the same sandbox as runCode, with ' +
      '/workspace as the working directory. Returns stdout, stderr and the exit code. ' +
      NETWORK_HELP,
    inputSchema: z.object({
      command: z.string().describe('The command line, run with bash -lc'),
      timeoutS: z
        .number()
        .positive()
        .max(maxTimeoutS)
        .optional()
        .describe(`Seconds before the command is killed (default ${defaultShellTimeoutS})`),
    }),
    execute: async ({ command, timeoutS }, { abortSignal, toolCallId }): Promise<RunShellOutput> => {
      const t = Math.min(timeoutS ?? defaultShellTimeoutS, maxTimeoutS);
      debug?.(`runShell (${toolCallId}) runs`, { command });
      const { value, note } = await sandgate.runCommand(sessionId, { cmd: command, timeout_s: t }, { signal: abortSignal }).catch((e) => {
        debug?.(`runShell (${toolCallId}) failed`, { error: String(e) });
        throw e;
      });
      const stdout = trimMiddle(stripAnsi(value.stdout), maxChars);
      const stderr = trimMiddle(stripAnsi(value.stderr), maxChars);
      const out: RunShellOutput = {
        stdout: stdout.text,
        stderr: stderr.text,
        exitCode: value.exit_code,
        timedOut: value.timed_out,
        truncated: value.truncated || stdout.trimmed || stderr.trimmed,
      };
      const notes = joinNotes(note, sandboxEndedNote(value.sandbox_ended), egressNote(value.stdout, value.stderr));
      if (notes) out.note = notes;
      debug?.(`runShell (${toolCallId}) ended`, {
        stdout: out.stdout,
        stderr: out.stderr,
        'exit code': out.exitCode === null ? 'none (a signal ended it)' : String(out.exitCode),
        error: out.timedOut ? `timed out after ${t} s` : undefined,
        note: out.note,
      });
      return out;
    },
  });

  return { runCode, runShell };
}
