// Builds an ExecuteResult from the messages of one execute_request, as the
// gateway's REST execute does: streams, display bundles, the result, the error.
import type { JupyterMessage } from './kernel-channel.js';
import { CappedText } from './text.js';
import type { ExecuteError, ExecuteResult, OutputBundle } from './types.js';

export interface ExecuteCallbacks {
  /** Each stdout chunk as it arrives. */
  onStdout?: (text: string) => void;
  /** Each stderr chunk as it arrives. */
  onStderr?: (text: string) => void;
  /** Each display_data (and update_display_data) bundle as it arrives. */
  onDisplay?: (bundle: OutputBundle) => void;
  /** The execute_result bundle. */
  onResult?: (bundle: OutputBundle) => void;
  /** The error the code raised. */
  onError?: (error: ExecuteError) => void;
}

export interface CollectorLimits {
  /** Characters kept per stream (head and tail; the middle is counted and dropped). */
  streamChars: number;
  /** Bytes of display bundles kept; bundles past it are dropped. */
  outputBytes: number;
}

function bundleSize(data: Record<string, unknown>): number {
  let n = 0;
  for (const v of Object.values(data)) n += typeof v === 'string' ? v.length : JSON.stringify(v ?? null).length;
  return n;
}

/** Feeds on the messages parented by one execute_request; `done` once its reply and idle status arrived. */
export class ExecutionCollector {
  private readonly stdout: CappedText;
  private readonly stderr: CappedText;
  private outputs: OutputBundle[] = [];
  private outputBytes = 0;
  private droppedOutputs = false;
  private result: string | null = null;
  private error: ExecuteError | null = null;
  private executionCount: number | null = null;
  private replyStatus: string | null = null;
  private idle = false;
  private clearPending = false;
  private readonly started = Date.now();

  constructor(
    readonly msgId: string,
    private readonly limits: CollectorLimits,
    private readonly callbacks: ExecuteCallbacks = {}
  ) {
    this.stdout = new CappedText(limits.streamChars);
    this.stderr = new CappedText(limits.streamChars);
  }

  get done(): boolean {
    return this.replyStatus !== null && this.idle;
  }

  /** Handles one message; returns true when the execution is complete. */
  feed(msg: JupyterMessage): boolean {
    const type = msg.header.msg_type;
    const c = msg.content;
    if (msg.channel === 'shell' && type === 'execute_reply') {
      this.replyStatus = String(c.status ?? 'ok');
      if (typeof c.execution_count === 'number') this.executionCount = c.execution_count;
      if (this.replyStatus === 'error' && !this.error) this.error = toError(c);
      if (this.replyStatus === 'aborted' && !this.error)
        this.error = { ename: 'Aborted', evalue: 'The kernel aborted this request (an earlier request failed)', traceback: [] };
      return this.done;
    }
    if (msg.channel !== 'iopub') return this.done;
    if (type !== 'status' && type !== 'execute_input' && type !== 'clear_output' && this.clearPending) this.clearNow();
    switch (type) {
      case 'status':
        if (c.execution_state === 'idle') this.idle = true;
        break;
      case 'stream': {
        const text = String(c.text ?? '');
        if (c.name === 'stderr') {
          this.stderr.append(text);
          this.callbacks.onStderr?.(text);
        } else {
          this.stdout.append(text);
          this.callbacks.onStdout?.(text);
        }
        break;
      }
      case 'display_data':
      case 'update_display_data':
      case 'execute_result': {
        const bundle: OutputBundle = {
          output_type: type,
          data: (c.data as Record<string, unknown>) ?? {},
          metadata: (c.metadata as Record<string, unknown>) ?? {},
        };
        const displayId = (c.transient as { display_id?: unknown } | undefined)?.display_id;
        if (typeof displayId === 'string') bundle.display_id = displayId;
        if (type === 'execute_result') {
          const text = bundle.data['text/plain'];
          this.result = typeof text === 'string' ? text : null;
          if (typeof c.execution_count === 'number') this.executionCount = c.execution_count;
          this.callbacks.onResult?.(bundle);
        } else {
          this.callbacks.onDisplay?.(bundle);
        }
        this.keep(bundle);
        break;
      }
      case 'error':
        this.error = toError(c);
        this.callbacks.onError?.(this.error);
        break;
      case 'clear_output':
        if (c.wait) this.clearPending = true;
        else this.clearNow();
        break;
    }
    return this.done;
  }

  private keep(bundle: OutputBundle): void {
    if (bundle.output_type === 'update_display_data') {
      const i = this.outputs.findIndex((o) => o.display_id !== undefined && o.display_id === bundle.display_id);
      if (i >= 0) {
        this.outputBytes -= bundleSize(this.outputs[i]!.data);
        this.outputs[i] = { ...bundle, output_type: this.outputs[i]!.output_type };
        this.outputBytes += bundleSize(bundle.data);
      }
      return;
    }
    const size = bundleSize(bundle.data);
    if (this.outputBytes + size > this.limits.outputBytes) {
      this.droppedOutputs = true;
      return;
    }
    this.outputBytes += size;
    this.outputs.push(bundle);
  }

  private clearNow(): void {
    this.clearPending = false;
    this.stdout.clear();
    this.stderr.clear();
    this.outputs = this.outputs.filter((o) => o.output_type === 'execute_result');
    this.outputBytes = this.outputs.reduce((n, o) => n + bundleSize(o.data), 0);
  }

  /** The record so far; `timedOut` and `kernelRestarted` come from the caller. */
  snapshot(timedOut: boolean, kernelRestarted: boolean): ExecuteResult {
    let status: ExecuteResult['status'] = this.error ? 'error' : 'ok';
    if (timedOut) status = 'timeout';
    return {
      msg_id: this.msgId,
      status,
      execution_count: this.executionCount,
      stdout: this.stdout.toString(),
      stderr: this.stderr.toString(),
      result: this.result,
      outputs: this.outputs,
      error: this.error,
      timed_out: timedOut,
      kernel_restarted: kernelRestarted,
      duration_ms: Date.now() - this.started,
      truncated: this.stdout.truncated || this.stderr.truncated || this.droppedOutputs,
    };
  }
}

function toError(c: Record<string, unknown>): ExecuteError {
  return {
    ename: String(c.ename ?? 'Error'),
    evalue: String(c.evalue ?? ''),
    traceback: Array.isArray(c.traceback) ? c.traceback.map(String) : [],
  };
}
