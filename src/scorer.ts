/**
 * The second stage: a logistic model over hashed features (see features.ts) that gives the calibrated
 * probability that a message needs ACTION. Its weights are data (config/scorer.json), made by
 * `task-router train` and validated here at load.
 */
import { z } from 'zod';

export const SCORER_VERSION = 1;

export const ScorerDataSchema = z
  .object({
    version: z.literal(SCORER_VERSION),
    /** Content digest of everything below: recomputed at load, so an edited or damaged file is refused. */
    id: z.string().regex(/^[0-9a-f]{16}$/),
    /** log2 of the weight table's size. */
    bits: z.number().int().min(8).max(24),
    bias: z.number().finite(),
    /** Weights are stored as 16-bit integers: weight = stored / scale. */
    scale: z.number().positive().finite(),
    /** Little-endian Int16 weights, base64. */
    weights: z.string(),
    /** Platt calibration of the raw margin: p = σ(a·margin + b). */
    calibration: z.object({ a: z.number().finite(), b: z.number().finite() }).strict(),
    /** Forced choice: ACTION at or above this probability. */
    threshold: z.number().min(0).max(1),
    /** Probabilities strictly inside this band are unsure. */
    band: z.tuple([z.number().min(0).max(1), z.number().min(0).max(1)]).refine(([low, high]) => low <= high, 'band is [low, high] with low ≤ high'),
    /** What it was trained on: line count and a digest of the training lines. */
    trainedOn: z.object({ lines: z.number().int().nonnegative(), digest: z.string() }).strict(),
  })
  .strict();

export type ScorerData = z.infer<typeof ScorerDataSchema>;

export class ScorerError extends Error {}

/** One feature's pull on the score: positive towards ACTION. */
export interface FeatureWeight {
  readonly feature: string;
  readonly weight: number;
}

export interface Score {
  /** Calibrated probability of ACTION, 0..1. */
  readonly score: number;
  /** The features that moved the score most, strongest first. */
  readonly top: readonly FeatureWeight[];
}

/**
 * Features as a scorer reads them: a hash per feature, which picks its weight, and its name, made only
 * for the few an explanation shows.
 */
export interface HashedFeatures {
  readonly hashes: readonly number[];
  name(index: number): string;
}

/** Features given by their names, each hashed with fnv1a. */
export function namedFeatures(names: readonly string[]): HashedFeatures {
  return { hashes: names.map((name) => fnv1a(name)), name: (index) => names[index] as string };
}

/** Every name of `features`, in order. */
export function featureNames(features: HashedFeatures): string[] {
  return features.hashes.map((_, index) => features.name(index));
}

export interface Scorer {
  readonly id: string;
  readonly threshold: number;
  readonly band: readonly [number, number];
  score(features: HashedFeatures): Score;
}

/** FNV-1a over UTF-16 code units, with a seed so two independent digests can be made. */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed >>> 0;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** A 64-bit content digest as 16 hex digits (two FNV-1a runs): an identifier, not a security measure. */
export function digest(text: string): string {
  return fnv1a(text).toString(16).padStart(8, '0') + fnv1a(text, 0x9e3779b9).toString(16).padStart(8, '0');
}

/**
 * A hash of two hashes (a feature read in a setting: a word with the route it continues), mixed so its
 * low bits, which pick the slot, depend on every bit of both.
 */
export function combineHashes(first: number, second: number): number {
  let hash = (first ^ Math.imul(second, 0xcc9e2d51)) >>> 0;
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/** The digest the `id` field must hold: every field but `id`, in a fixed order. */
export function scorerDigest(data: Omit<ScorerData, 'id'>): string {
  const { version, bits, bias, scale, weights, calibration, threshold, band, trainedOn } = data;
  return digest(JSON.stringify([version, bits, bias, scale, weights, calibration, threshold, band, trainedOn]));
}

export const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/**
 * A table with few weights set (the context model's: about 2% of its slots), as open addressing over
 * the slots that have one: [slot + 1, weight] pairs in one array, at most half full. 128 KB against
 * 512 KB for the context model, and a message's lookups, most of them for a feature without a weight,
 * land in that much less memory: between requests of a gateway, far less of it has left the cache.
 * Null when a dense table is as small.
 */
function sparseWeights(table: Int16Array): Int32Array | null {
  let set = 0;
  for (const weight of table) if (weight !== 0) set += 1;
  let capacity = 16;
  while (capacity < 2 * set) capacity *= 2;
  // Two 4-byte numbers a pair against 2 bytes a slot.
  if (capacity * 8 >= table.length * 2) return null;
  const pairs = new Int32Array(2 * capacity);
  const mask = capacity - 1;
  table.forEach((weight, slot) => {
    if (weight === 0) return;
    let at = slot & mask;
    while (pairs[2 * at] !== 0) at = (at + 1) & mask;
    pairs[2 * at] = slot + 1;
    pairs[2 * at + 1] = weight;
  });
  return pairs;
}

/** The stored weight of `slot` in sparseWeights' pairs, 0 when it has none. Slots are hashes, so their low bits spread them. */
function sparseWeight(pairs: Int32Array, slot: number): number {
  const mask = pairs.length / 2 - 1;
  for (let at = slot & mask; ; at = (at + 1) & mask) {
    const held = pairs[2 * at] as number;
    if (held === slot + 1) return pairs[2 * at + 1] as number;
    if (held === 0) return 0;
  }
}

/** The stored weights of the features being scored, shared by every scorer: one message is scored at a time. */
let stored = new Int32Array(256);

/** How many features an explanation lists. */
const TOP_FEATURES = 5;

/** Validates scorer data (the shape of config/scorer.json) and returns a scorer. Throws ScorerError saying what is wrong. */
export function createScorer(input: unknown): Scorer {
  const parsed = ScorerDataSchema.safeParse(input);
  if (!parsed.success) {
    throw new ScorerError(`invalid scorer weights: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`);
  }
  const data = parsed.data;
  const { id, ...rest } = data;
  if (scorerDigest(rest) !== id) throw new ScorerError(`scorer weights do not match their id ${id}: the file was edited or damaged; rebuild it with \`task-router train\``);
  const bytes = Buffer.from(data.weights, 'base64');
  if (bytes.length !== 2 << data.bits) throw new ScorerError(`scorer weights hold ${bytes.length} bytes, ${2 << data.bits} expected for bits ${data.bits}`);
  // Kept as the stored 16-bit integers and divided on use (the same double as dividing up front): a
  // quarter of the memory, so the random lookups of a message's features miss the cache less.
  const table = new Int16Array(1 << data.bits);
  for (let slot = 0; slot < table.length; slot += 1) table[slot] = bytes.readInt16LE(slot * 2);
  const sparse = sparseWeights(table);
  const dense = sparse === null ? table : null;
  const scale = data.scale;
  const { a, b } = data.calibration;
  const topSizes = new Float64Array(TOP_FEATURES);
  const topWeights = new Float64Array(TOP_FEATURES);
  const topIndices = new Int32Array(TOP_FEATURES);

  return {
    id,
    threshold: data.threshold,
    band: data.band,
    score(features) {
      let margin = data.bias;
      const mask = (1 << data.bits) - 1;
      const hashes = features.hashes;
      const count = hashes.length;
      if (stored.length < count) stored = new Int32Array(2 * count);
      // The weights are read first, in a loop that nothing in it waits on: the reads of a message's
      // features, each likely a cache miss between the requests of a gateway, are then in flight
      // together instead of one after the other behind the branches below.
      for (let index = 0; index < count; index += 1) {
        const slot = (hashes[index] as number) & mask;
        stored[index] = sparse === null ? ((dense as Int16Array)[slot] as number) : sparseWeight(sparse, slot);
      }
      // The strongest pulls, kept sorted by size as they come: a handful of comparisons per feature,
      // no sort; a new pull goes after those of the same size. Plain arrays, no object per candidate,
      // and names made for the kept ones only.
      let kept = 0;
      for (let index = 0; index < count; index += 1) {
        const weightStored = stored[index] as number;
        if (weightStored === 0) continue;
        const weight = weightStored / scale;
        margin += weight;
        const size = Math.abs(weight);
        if (kept === TOP_FEATURES && size <= (topSizes[TOP_FEATURES - 1] as number)) continue;
        let at = kept;
        while (at > 0 && size > (topSizes[at - 1] as number)) at -= 1;
        for (let move = Math.min(kept, TOP_FEATURES - 1); move > at; move -= 1) {
          topSizes[move] = topSizes[move - 1] as number;
          topWeights[move] = topWeights[move - 1] as number;
          topIndices[move] = topIndices[move - 1] as number;
        }
        topSizes[at] = size;
        topWeights[at] = weight;
        topIndices[at] = index;
        if (kept < TOP_FEATURES) kept += 1;
      }
      const top: FeatureWeight[] = [];
      for (let at = 0; at < kept; at += 1) top.push({ feature: features.name(topIndices[at] as number), weight: topWeights[at] as number });
      return { score: sigmoid(a * margin + b), top };
    },
  };
}
