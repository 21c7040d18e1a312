/** The benchmarks' child processes: spawned, waited for until ready, stopped, and never left behind. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

const children = new Set<ChildProcess>();

process.on('exit', () => {
  for (const child of children) if (alive(child)) child.kill('SIGKILL');
});

/** Registers a child to be killed if the benchmark exits first. */
export function track<T extends ChildProcess>(child: T): T {
  children.add(child);
  return child;
}

export function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Sends SIGTERM, then SIGKILL if the process has not exited within timeoutMs. */
export function terminate(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (!alive(child)) return Promise.resolve();
  return new Promise((resolveExit) => {
    const timer = setTimeout(() => {
      process.stderr.write(`pid ${child.pid} did not exit within ${timeoutMs} ms of SIGTERM; killing it\n`);
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolveExit();
    });
    child.kill('SIGTERM');
  });
}

/** A node process spawned with its output piped, drained and its last lines kept for error messages. */
export interface Spawned {
  readonly proc: ChildProcess;
  /** The last 30 lines of stdout and stderr, escape sequences removed. */
  readonly tail: string[];
}

/** The last lines of a child's output, indented, for an error message. */
export function lastOutput(spawned: Spawned): string {
  return `  last output:\n${spawned.tail.map((line) => `    ${line}`).join('\n')}`;
}

/**
 * Spawns `node args…` and resolves once `watch` says a line of its output (stdout or stderr) shows it
 * ready; `watch` goes on seeing every line after that. Rejects, with the last output, when the process
 * exits or errs first or is not ready within timeoutMs.
 */
export function spawnReady(label: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }, watch: (line: string) => boolean): Promise<Spawned> {
  const proc = track(spawn(process.execPath, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const spawned: Spawned = { proc, tail: [] };
  return new Promise((resolveReady, reject) => {
    let done = false;
    const timer = setTimeout(() => finish(new Error(`${label} was not ready within ${options.timeoutMs} ms`)), options.timeoutMs);
    const finish = (error?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (!error) return resolveReady(spawned);
      proc.kill('SIGKILL');
      reject(new Error(`${error.message}\n${lastOutput(spawned)}`));
    };
    const onLine = (line: string) => {
      spawned.tail.push(line.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').slice(0, 300));
      if (spawned.tail.length > 30) spawned.tail.shift();
      if (watch(line)) finish();
    };
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', onLine);
    createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on('line', onLine);
    proc.once('error', (error) => finish(error));
    proc.once('exit', (code, signal) => finish(new Error(`${label} exited (code ${code}, signal ${signal}) before it was ready`)));
  });
}
