import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

const digest = (text: string) => hash('sha256', text, 'buffer');

/** Constant-time comparison of a presented token with the expected one (lengths hidden too). */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The auth scheme is case-insensitive (RFC 9110 §11.1): "bearer" and "BEARER" are Bearer. */
const BEARER = /^Bearer[ \t]+(\S.*)$/i;

/** The token of an `Authorization: Bearer <token>` header, or '' when there is none. */
export function bearerToken(header: string | undefined): string {
  return BEARER.exec(header ?? '')?.[1]?.trim() ?? '';
}

/**
 * Who a request is, for session ownership: a hash of the API credential it carries (Authorization and
 * x-api-key), or '' when it carries none. Only the hash is kept, never the credential.
 */
export function credentialOwner(headers: IncomingHttpHeaders): string {
  const values = [headers.authorization, headers['x-api-key']].map((value) => (Array.isArray(value) ? value.join(',') : value ?? ''));
  return values.every((value) => value === '') ? '' : hash('sha256', values.join('\n'), 'hex');
}
