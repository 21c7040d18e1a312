/**
 * A SIGHUP that reaches `task-router serve` while it starts (a configuration tool that signals after
 * writing the file, as the gateway's own docs say to) must not end it: Node's default for SIGHUP with
 * no handler is to exit. Slow: it signals a real process while it starts.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../support/built.js';
import { writeTestConfig } from '../support/config-file.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-sighup-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('serve, signalled with SIGHUP while it starts', () => {
  it('starts anyway, and reloads once it serves', async () => {
    const file = await writeTestConfig(dir, 'hup.yaml', { logging: { decisions: false, memory: false } });
    const child = spawn(process.execPath, [ensureBuilt('cli/main.js'), 'serve', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info', LOG_DIR: join(dir, 'logs') } });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(`exited (${signal ?? code})`)));
    try {
      // "task-router starting" is logged before the configuration is read: from then on until it
      // listens (the rule set compiled, the warm-up classified), every SIGHUP is one a tool may send.
      const starting = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('no "task-router starting" line within 20 s'), 20_000).unref()), new Promise<string>((resolve) => {
        const poll = setInterval(() => {
          if (output.includes('"task-router starting"')) {
            clearInterval(poll);
            resolve('starting');
          }
        }, 5);
      })]);
      expect(starting, output).toBe('starting');
      child.kill('SIGHUP');
      const listening = await Promise.race([exited, new Promise<string>((resolve) => {
        const poll = setInterval(() => {
          if (output.includes('"task-router listening"') && output.includes('"config reloaded"')) {
            clearInterval(poll);
            resolve('listening');
          }
        }, 20);
      })]);
      expect(listening, output).toBe('listening');
      expect(output).toMatch(/"trigger":"SIGHUP"[^\n]*"config reloaded"/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
