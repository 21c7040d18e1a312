/**
 * The long soak: bench/soak.ts with its long mix (answers, actions and streams in the three APIs,
 * upstream failures, 5% client aborts, 5% malformed bodies) for 10 minutes, with the decision and
 * memory logs on a full disk (every write fails with ENOSPC), at a bounded rate. It stops by itself and
 * prints RSS, heap and event-loop lag after warm-up, in the middle and at the end, and PASS or MISS for
 * RSS staying within ±15% after warm-up. Not part of npm test: it takes as long as it says.
 *
 *   npm run build && node --expose-gc dist/bench/soak-long.js [--duration SECONDS] [--rate N] [--log-disk full|unwritable|ok]
 *
 *   --duration  seconds of traffic (default 600)
 *   --rate      requests started per second (default 100)
 *   --log-disk  full (default), unwritable (the log folder can never be made) or ok
 */
import { LONG_MIX, soakMain } from './soak.js';

soakMain({ durationS: 600, kinds: LONG_MIX, logDisk: 'full' });
