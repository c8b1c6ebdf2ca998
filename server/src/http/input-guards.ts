/**
 * Checks every route's path, query and body before its schema sees them, in one place so
 * that no route can forget them:
 * - NUL characters are refused, naming the field. PostgreSQL cannot store U+0000 in text and answered 500;
 *   SQLite would store it and cut the text short in most tools. No field of the API has a use for it.
 *   So are unpaired UTF-16 surrogates (JSON's "\udfff"): not Unicode, so no UTF-8 store keeps them as sent,
 *   and PostgreSQL answered 500 on one in an idempotency key (found by the fuzz suite).
 * - Integer path and query fields must be written in plain decimal digits. Coercion reads `0x10` as 16, `+1`
 *   and `1\n` as 1, and `1e400` as Infinity (which ajv takes for an integer); an id is a name, and a name
 *   has one spelling.
 * - Query parameters an API route (/api/v1/) does not declare are refused, as unknown body properties are.
 *   Routes with a query schema refuse them there (`additionalProperties: false`, not stripped; see app.ts).
 * - Answers under /api/ say `Cache-Control: no-store` (item 8): they carry mail data, tokens or both, and no
 *   browser, proxy or shared cache should keep them.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest } from '../errors.js';

/** Deep bodies are refused by their schema anyway; the walk stops here so that it stays cheap. */
const MAX_DEPTH = 32;

const PLAIN_INTEGER = /^-?(0|[1-9][0-9]*)$/;

interface PropertySchema {
  type?: unknown;
}
interface ObjectSchema {
  properties?: Record<string, PropertySchema>;
}

/** `body.to[0].recipientName`, `body.headers.X-Tag`, `query.q`, `path.id`. */
function fieldOf(parent: string, key: string | number): string {
  return typeof key === 'number' ? `${parent}[${key}]` : `${parent}.${key}`;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text no store keeps as sent: a NUL character or an unpaired surrogate. */
function isUnstorable(text: string): boolean {
  return text.includes('\u0000') || LONE_SURROGATE.test(text);
}

/** The first field holding a NUL or an unpaired surrogate (in a value or in a property name), or undefined. */
export function findNul(value: unknown, field: string, depth = 0): string | undefined {
  if (typeof value === 'string') return isUnstorable(value) ? field : undefined;
  if (typeof value !== 'object' || value === null || depth > MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], fieldOf(field, i), depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    if (isUnstorable(key)) return field;
    const found = findNul(item, fieldOf(field, key), depth + 1);
    if (found) return found;
  }
  return undefined;
}

function integerFields(schema: unknown): string[] {
  const properties = (schema as ObjectSchema | undefined)?.properties;
  if (!properties) return [];
  return Object.entries(properties)
    .filter(([, property]) => property.type === 'integer')
    .map(([name]) => name);
}

function checkIntegers(values: unknown, schema: unknown, part: string): void {
  if (typeof values !== 'object' || values === null) return;
  const record = values as Record<string, unknown>;
  for (const name of integerFields(schema)) {
    const raw = record[name];
    if (raw === undefined) continue;
    if (typeof raw !== 'string' || !PLAIN_INTEGER.test(raw)) {
      throw badRequest(
        'invalid_request',
        `${part}.${name} must be integer, written in plain decimal digits (no sign, exponent, leading zero or spaces).`,
      );
    }
  }
}

function checkRequest(request: FastifyRequest): void {
  const schema = request.routeOptions.schema;
  const query = request.query as Record<string, unknown> | undefined;
  const nulField = findNul(request.params, 'path') ?? findNul(query, 'query') ?? findNul(request.body, 'body');
  if (nulField)
    throw badRequest('invalid_request', `${nulField} must not contain NUL characters or unpaired surrogates (text that is not Unicode).`);
  checkIntegers(request.params, schema?.params, 'path');
  checkIntegers(query, schema?.querystring, 'query');
  if (!schema?.querystring && request.url.startsWith('/api/v1/') && query) {
    const unknown = Object.keys(query)[0];
    if (unknown !== undefined) throw badRequest('invalid_request', `query.${unknown} is not an accepted field.`);
  }
}

export function registerInputGuards(app: FastifyInstance): void {
  // preValidation: after the body is parsed, before the schema coerces strings into numbers.
  app.addHook('preValidation', async (request) => checkRequest(request));
  app.addHook('onSend', async (request, reply) => {
    // A route that says how it may be cached keeps its own word (the image proxy: `private`, docs/api.md).
    if (request.url.startsWith('/api/') && !reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
  });
}
