/**
 * A value kept on each request, under a symbol of its own: what a WeakMap keyed by requests would
 * hold, without the WeakMap. Under load, the entries the gateway added to WeakMaps and WeakSets on
 * every request kept what they held alive past young-generation collections, to be copied and then
 * promoted: with them, 5.6 KB promoted per request for 1.3 KB chat bodies and 70 KB for 30 KB agent
 * conversations (node --trace-gc-nvp); with these slots and releaseBody, 1.7 to 2.3 KB and 3 to 22 KB.
 * A property goes with its request.
 */
export interface RequestSlot<T> {
  get(req: object): T | undefined;
  set(req: object, value: T | undefined): void;
}

export function requestSlot<T>(name: string): RequestSlot<T> {
  const key = Symbol(name);
  return {
    get: (req) => (req as Record<symbol, T | undefined>)[key],
    set: (req, value) => {
      (req as Record<symbol, T | undefined>)[key] = value;
    },
  };
}
