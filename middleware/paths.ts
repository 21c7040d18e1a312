import type { RequestHandler } from 'express';
import { formatForPath } from '../src/index.js';
import { sendError, sendRouterError } from './errors.js';
import { fullPath } from './request-path.js';

/** Percent-escapes of ASCII characters: the only ones that can spell a route differently. */
const ASCII_ESCAPE = /%([0-7][0-9a-f])/gi;
/** ASCII control characters, which some servers drop from a path (%00 truncation and the like). */
const CONTROL = /[\u0000-\u001f\u007f]/g;

/**
 * The path as the most lenient server could read it: ASCII escapes decoded (a few times over, for
 * double encoding), the query or fragment an escape revealed cut off, `\` read as `/`, `;parameters`,
 * controls and padding dropped from segments, empty and `.` segments removed, `..` resolved, lower case.
 */
export function lenientPath(path: string): string {
  let decoded = path;
  for (let round = 0; round < 3; round += 1) {
    const next = decoded.replace(ASCII_ESCAPE, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === decoded) break;
    decoded = next;
  }
  const cut = decoded.search(/[?#]/);
  if (cut >= 0) decoded = decoded.slice(0, cut);
  const segments: string[] = [];
  for (const raw of decoded.replaceAll('\\', '/').split('/')) {
    const segment = (raw.split(';')[0] ?? '').replace(CONTROL, '').trim();
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  return `/${segments.join('/')}`.toLowerCase();
}

/** A path every server reads alike (lower-case words between single slashes): lenientPath leaves it as it is. */
const PLAIN_PATH = /^(?:\/[a-z0-9_-]+)+$/;

/** The gateway's own paths; Express matches them case-insensitively, before anything is proxied. */
const OWN_PREFIX = /^\/(?:admin|router)(?:\/|$)/i;

/**
 * Refuses a request whose path the gateway would read as one thing and a normalising upstream (or a
 * server behind it) as another: a POST that routes as no chat API, or another one, as written but as a
 * chat API once decoded and normalised (`/v1//chat//completions`, `/v1/chat/%63ompletions`,
 * `/v1/Messages`, `/v1/messages/x/..`), and a path that spells one of our own endpoints in a way we do
 * not match (`//router/outcomes`). Routing them would guess at the upstream's normalisation; forwarding
 * them would skip routing (no prompt, no decision, no limits). Clients and SDKs never send them, so they
 * are refused, in the API's error shape, with the path to use. Every other path goes on byte for byte.
 */
export function refuseAmbiguousPaths(): RequestHandler {
  return (req, res, next) => {
    const path = req.path;
    const lenient = PLAIN_PATH.test(path) ? path : lenientPath(path);
    if (OWN_PREFIX.test(lenient) && !OWN_PREFIX.test(path)) {
      return sendRouterError(res, 400, `the path "${path.slice(0, 200)}" is not the canonical spelling of a task-router endpoint: use ${lenient}`);
    }
    if (req.method !== 'POST') return next();
    // Mounted below the root, the chat route is read from the whole path (see fullPath).
    const full = req.baseUrl === '' ? path : fullPath(req);
    const lenientFull = full === path ? lenient : PLAIN_PATH.test(full) ? full : lenientPath(full);
    const meant = formatForPath(lenientFull);
    if (meant !== null && formatForPath(full) !== meant) {
      return sendError(res, meant.name, 'invalid_request', `the path "${full.slice(0, 200)}" is not the canonical spelling of a chat route, so it is not routed: send it as ${lenientFull}`);
    }
    next();
  };
}
