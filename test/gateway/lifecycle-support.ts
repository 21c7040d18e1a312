/** What the probe and shutdown tests share: slow streams, a streamed request, and `task-router serve` in a process of its own. */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { ensureBuilt } from '../support/built.js';
import { pieces, replySse, sseEvents, type Behaviour } from '../support/fake-upstream.js';

/** An SSE stream of `count` events, `delayMs` apart. */
export const slowStream = (count: number, delayMs: number): Behaviour => replySse(sseEvents('openai-chat', pieces('one two three four five six seven eight nine ten'.split(' ').slice(0, count).join(' '), count).join(' ')), { delayMs });

export const STREAM_BODY = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'what is a race condition?' }] });

/** Starts a streamed chat request and resolves when its headers are in; `done` says how the body ended. */
export function startStream(url: string): Promise<{ done: Promise<{ complete: boolean; body: string }> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      const done = new Promise<{ complete: boolean; body: string }>((settle) => {
        res.on('end', () => settle({ complete: res.complete, body }));
        res.on('error', () => settle({ complete: false, body }));
        res.on('close', () => settle({ complete: res.complete, body }));
      });
      resolve({ done });
    });
    req.on('error', reject);
    req.end(STREAM_BODY);
  });
}

/**
 * `task-router serve --config configFile` from the built CLI, logging to `logDir`. `spawned` is handed the
 * process at once, so the test can kill it whatever happens next; resolves once the gateway listens.
 */
export async function serveCli(configFile: string, logDir: string, spawned: (child: ChildProcess) => void): Promise<{ url: string; output: () => string; exited: Promise<number | null> }> {
  const cli = ensureBuilt('cli/main.js');
  const child = spawn(process.execPath, [cli, 'serve', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_DIR: logDir } });
  spawned(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const listening = /"url":"(http:\/\/[^"]+)".*task-router listening/.exec(output);
    if (listening) return { url: listening[1] as string, output: () => output, exited };
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the CLI gateway did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
