/**
 * The set-up most gateway test files share, registered as vitest hooks in one call. Each helper hands
 * what it made to `use` once it exists, so a file keeps its own variables.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { apiReply, startFakeUpstream, startGatewayForTest, type FakeUpstream, type TestGateway } from './fake-upstream.js';

/**
 * A scratch folder and a fake upstream answering `ok`, for the tests of one file: made before them,
 * the upstream reset to `ok` before each test, both removed after them.
 */
export function scratchAndUpstream(name: string, use: (made: { dir: string; upstream: FakeUpstream }) => void): void {
  let made: { dir: string; upstream: FakeUpstream } | undefined;
  beforeAll(async () => {
    made = { dir: await mkdtemp(join(tmpdir(), `task-router-${name}-`)), upstream: await startFakeUpstream(apiReply('ok')) };
    use(made);
  });
  afterAll(async () => {
    await made?.upstream.close();
    if (made) await rm(made.dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    made?.upstream.reset();
    made?.upstream.respond(apiReply('ok'));
  });
}

/** A fake upstream answering `ok` and the gateway in front of it (the shipped configuration), for the tests of one file. */
export function gatewayAndUpstream(use: (made: { gateway: TestGateway; upstream: FakeUpstream }) => void): void {
  let made: { gateway: TestGateway; upstream: FakeUpstream } | undefined;
  beforeAll(async () => {
    const upstream = await startFakeUpstream(apiReply('ok'));
    made = { upstream, gateway: await startGatewayForTest({ upstreamUrl: upstream.url }) };
    use(made);
  });
  afterAll(async () => {
    await made?.gateway.close();
    await made?.upstream.close();
  });
}

/**
 * For tests that each start servers of their own (a fake upstream, a gateway with settings of its own):
 * what a test passes through the returned function is closed after it, passed or failed, the last
 * started first.
 */
export function closedAfterEach(): <T extends { close(): Promise<void> }>(started: T) => T {
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const server of open.splice(0).reverse()) await server.close();
  });
  return (started) => {
    open.push(started);
    return started;
  };
}
