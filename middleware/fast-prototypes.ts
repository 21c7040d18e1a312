/**
 * Puts the builtin prototypes back in V8's fast mode. A class that extends a builtin (node-redis
 * declares `class VerbatimString extends String`) leaves the builtin's prototype in dictionary mode
 * until a property is read through an instance of the class, which may never happen. Every method call
 * on a string then takes V8's slow path: the classifier ran at about 60% of its speed in a process that
 * had loaded node-redis (a string hash 6x slower). Reading a property through an object that inherits
 * from the prototype, from a function called often enough to keep feedback, has V8 make the prototype
 * fast again; a prototype that is fast already is left as it is.
 */

/** Times the read runs: V8 keeps feedback for a function only after its first few calls. */
const READS = 64;

function readThrough(probe: object): unknown {
  return (probe as { toString?: unknown }).toString;
}

/** Every global constructor's prototype, String.prototype among them. */
function builtinPrototypes(): object[] {
  const prototypes: object[] = [];
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    const value = Object.getOwnPropertyDescriptor(globalThis, name)?.value;
    const prototype: unknown = typeof value === 'function' ? value.prototype : undefined;
    if (typeof prototype === 'object' && prototype !== null) prototypes.push(prototype);
  }
  return prototypes;
}

/** Makes every global constructor's prototype fast again: call it once a library that subclasses a builtin is loaded. */
export function restoreFastPrototypes(): void {
  for (const prototype of builtinPrototypes()) {
    const probe = Object.create(prototype) as object;
    for (let read = 0; read < READS; read += 1) readThrough(probe);
  }
}
