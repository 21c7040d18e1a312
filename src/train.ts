/**
 * Trains the scorer: L2-regularised logistic regression over hashed features, full batch, with fixed
 * hyper-parameters, so the same examples in the same order give the same weights, bit for bit. One
 * model is fitted per fold and their weights averaged; the folds' margins on the lines each left out
 * calibrate the scores and place the threshold and the unsure band.
 */
import { scorerDigest, sigmoid, SCORER_VERSION, type HashedFeatures, type ScorerData } from './scorer.js';

export interface TrainingExample {
  readonly features: HashedFeatures;
  readonly action: boolean;
}

/** One fold: a model fitted on `train`; its margins on `dev`, lines it did not see, calibrate. */
export interface TrainingFold {
  readonly train: readonly TrainingExample[];
  readonly dev: readonly TrainingExample[];
}

/** The trained scorer and how the folds did on the lines each left out. */
export interface TrainedScorer {
  readonly data: ScorerData;
  readonly development: { readonly examples: number; readonly accuracy: number; readonly unsure: number };
}

export interface TrainOptions {
  /** log2 of the weight table's size. Default 18. */
  readonly bits?: number;
  /** Full-batch Adam steps. Default 300. */
  readonly iterations?: number;
  /** Adam step size. Default 0.05. */
  readonly rate?: number;
  /** L2 penalty: the mean log loss plus l2/2 · |w|². Default 1e-3. */
  readonly l2?: number;
  /** Share of development examples the band may hold as unsure. Default 0.08. */
  readonly unsureShare?: number;
  /** Weight of a missed ACTION against a needless one when picking the threshold. Default 2. */
  readonly missCost?: number;
}

interface Row {
  readonly slots: Uint32Array;
  readonly y: number;
}

const rowsOf = (examples: readonly TrainingExample[], bits: number): Row[] => {
  const mask = (1 << bits) - 1;
  return examples.map(({ features, action }) => ({ slots: Uint32Array.from(new Set(features.hashes.map((hash) => hash & mask))), y: action ? 1 : 0 }));
};

function margin(row: Row, weights: Float64Array, bias: number): number {
  let sum = bias;
  for (const slot of row.slots) sum += weights[slot] ?? 0;
  return sum;
}

/**
 * L2-regularised logistic regression by full-batch Adam: every step sees every example in the same
 * order, so the result does not depend on any shuffle, and rare features are pulled to zero by the
 * penalty instead of keeping whatever the last examples gave them. The two classes weigh the same.
 */
function fit(rows: readonly Row[], size: number, settings: { iterations: number; rate: number; l2: number }): { weights: Float64Array; bias: number } {
  const weights = new Float64Array(size);
  const gradient = new Float64Array(size);
  const first = new Float64Array(size);
  const second = new Float64Array(size);
  const used = Uint32Array.from(new Set(rows.flatMap((row) => [...row.slots]))).sort();
  const positives = rows.filter((row) => row.y === 1).length;
  const classWeight = [rows.length / (2 * Math.max(1, rows.length - positives)), rows.length / (2 * Math.max(1, positives))];
  let bias = 0;
  let biasFirst = 0;
  let biasSecond = 0;
  const [beta1, beta2] = [0.9, 0.999];
  for (let step = 1; step <= settings.iterations; step += 1) {
    for (const slot of used) gradient[slot] = settings.l2 * (weights[slot] ?? 0);
    let biasGradient = 0;
    for (const row of rows) {
      const error = ((sigmoid(margin(row, weights, bias)) - row.y) * (classWeight[row.y] ?? 1)) / rows.length;
      for (const slot of row.slots) gradient[slot] = (gradient[slot] ?? 0) + error;
      biasGradient += error;
    }
    const correction1 = 1 - beta1 ** step;
    const correction2 = 1 - beta2 ** step;
    for (const slot of used) {
      const g = gradient[slot] ?? 0;
      first[slot] = beta1 * (first[slot] ?? 0) + (1 - beta1) * g;
      second[slot] = beta2 * (second[slot] ?? 0) + (1 - beta2) * g * g;
      weights[slot] = (weights[slot] ?? 0) - (settings.rate * ((first[slot] ?? 0) / correction1)) / (Math.sqrt((second[slot] ?? 0) / correction2) + 1e-8);
    }
    biasFirst = beta1 * biasFirst + (1 - beta1) * biasGradient;
    biasSecond = beta2 * biasSecond + (1 - beta2) * biasGradient * biasGradient;
    bias -= (settings.rate * (biasFirst / correction1)) / (Math.sqrt(biasSecond / correction2) + 1e-8);
  }
  return { weights, bias };
}

/**
 * Platt scaling: the a, b that minimise log loss of σ(a·m + b) on the development margins, by Newton
 * steps halved until the loss falls. The targets are Platt's smoothed ones, (N₊ + 1)/(N₊ + 2) and
 * 1/(N₋ + 2), not 1 and 0: on a split the margins nearly separate, plain targets send a to infinity and
 * every score to 0 or 1, which leaves no unsure band.
 */
function calibrate(margins: readonly number[], labels: readonly number[]): { a: number; b: number } {
  const positives = labels.filter((label) => label === 1).length;
  const high = (positives + 1) / (positives + 2);
  const low = 1 / (margins.length - positives + 2);
  const targets = labels.map((label) => (label === 1 ? high : low));
  const loss = (a: number, b: number): number => {
    let total = 0;
    margins.forEach((m, index) => {
      const p = Math.min(1 - 1e-12, Math.max(1e-12, sigmoid(a * m + b)));
      const t = targets[index] as number;
      total -= t * Math.log(p) + (1 - t) * Math.log(1 - p);
    });
    return total;
  };
  let a = 1;
  let b = 0;
  let current = loss(a, b);
  for (let step = 0; step < 50; step += 1) {
    let ga = 0;
    let gb = 0;
    let haa = 1e-9;
    let hab = 0;
    let hbb = 1e-9;
    margins.forEach((m, index) => {
      const p = sigmoid(a * m + b);
      const d = p - (targets[index] as number);
      const w = p * (1 - p);
      ga += d * m;
      gb += d;
      haa += w * m * m;
      hab += w * m;
      hbb += w;
    });
    const det = haa * hbb - hab * hab;
    if (det <= 0) break;
    const da = (hbb * ga - hab * gb) / det;
    const db = (haa * gb - hab * ga) / det;
    let scale = 1;
    let next = loss(a - da, b - db);
    while (scale > 1e-6 && !(next < current)) {
      scale /= 2;
      next = loss(a - scale * da, b - scale * db);
    }
    if (scale <= 1e-6) break;
    a -= scale * da;
    b -= scale * db;
    const done = current - next < 1e-10;
    current = next;
    if (done) break;
  }
  return { a, b };
}

const round = (value: number, places: number): number => Number(value.toFixed(places));

/**
 * The threshold where a calibrated score's expected costs meet (a missed ACTION costs `missCost`, a
 * needless one 1), and the narrowest band around it that holds `unsureShare` of the scores. The
 * threshold the development lines alone would choose, the one of lowest cost there, sat on a flat
 * curve: adding three lines moved it from 0.45 to 0.51 and a hundred decisions with it.
 */
function thresholdAndBand(scores: readonly number[], missCost: number, unsureShare: number): { threshold: number; band: [number, number] } {
  const threshold = round(1 / (1 + missCost), 2);
  let width = 0;
  for (; width < 0.5; width += 0.005) {
    const unsure = scores.filter((score) => score > threshold - width && score < threshold + width).length;
    if (unsure > unsureShare * scores.length) break;
  }
  const half = Math.max(0, width - 0.005);
  return { threshold, band: [round(Math.max(0, threshold - half), 3), round(Math.min(1, threshold + half), 3)] };
}

/**
 * Fits one model per fold and averages them: a line's weight then depends less on which other lines
 * happened to be there, so adding a few lines moves fewer decisions. The folds' margins on the lines
 * they left out calibrate the average and place its threshold and band. `linesDigest` identifies the
 * training lines in the output.
 */
export function trainScorer(folds: readonly TrainingFold[], linesDigest: string, options: TrainOptions = {}): TrainedScorer {
  if (folds.length === 0) throw new Error('trainScorer needs at least one fold');
  const bits = options.bits ?? 18;
  const settings = { iterations: options.iterations ?? 300, rate: options.rate ?? 0.05, l2: options.l2 ?? 1e-3 };
  const size = 1 << bits;
  const averaged = new Float64Array(size);
  let averagedBias = 0;
  const margins: number[] = [];
  const labels: number[] = [];
  for (const fold of folds) {
    const { weights, bias } = fit(rowsOf(fold.train, bits), size, settings);
    for (let slot = 0; slot < size; slot += 1) averaged[slot] = (averaged[slot] as number) + (weights[slot] as number) / folds.length;
    averagedBias += bias / folds.length;
    for (const row of rowsOf(fold.dev, bits)) {
      margins.push(margin(row, weights, bias));
      labels.push(row.y);
    }
  }

  // Stored as 16-bit integers: the largest weight maps to 32767.
  let largest = 1e-9;
  for (const weight of averaged) largest = Math.max(largest, Math.abs(weight));
  const scale = round(32767 / largest, 4);
  const bytes = Buffer.alloc(2 << bits);
  averaged.forEach((weight, slot) => {
    bytes.writeInt16LE(Math.max(-32767, Math.min(32767, Math.round(weight * scale))), slot * 2);
  });

  const calibration = (({ a, b }) => ({ a: round(a, 6), b: round(b, 6) }))(calibrate(margins, labels));
  const scores = margins.map((m) => sigmoid(calibration.a * m + calibration.b));
  const { threshold, band } = thresholdAndBand(scores, options.missCost ?? 2, options.unsureShare ?? 0.08);
  const right = scores.filter((score, index) => (score >= threshold ? 1 : 0) === labels[index]).length;
  const unsure = scores.filter((score) => score > band[0] && score < band[1]).length;

  const data: Omit<ScorerData, 'id'> = {
    version: SCORER_VERSION,
    bits,
    bias: round(averagedBias, 6),
    scale,
    weights: bytes.toString('base64'),
    calibration,
    threshold,
    band,
    // Every fold holds all the lines, between those it trains on and those it leaves out.
    trainedOn: { lines: (folds[0] as TrainingFold).train.length + (folds[0] as TrainingFold).dev.length, digest: linesDigest },
  };
  const { version, ...rest } = data;
  const examples = scores.length;
  return {
    data: { version, id: scorerDigest(data), ...rest },
    development: { examples, accuracy: examples ? right / examples : 0, unsure: examples ? unsure / examples : 0 },
  };
}
