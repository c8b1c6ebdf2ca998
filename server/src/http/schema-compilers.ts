/**
 * The compilers Fastify turns each route's schemas into functions with: ajv validators for the request, and
 * fast-json-stringify serializers for the answer. Both compile a route's schema when the route first needs it,
 * not every route at start-up: compiling all of them was about a third of a server start's CPU (fast-json-
 * stringify also validates every schema against the JSON Schema meta-schema), paid by every process and every
 * `buildApp` however few routes it then serves. A schema Fastify cannot compile is a programming error that
 * the route's tests meet at its first request either way.
 */
import AjvCompiler from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

// The packages' own types describe the compiler's call as (schema) although Fastify hands it the route
// definition; it is seen here through an accurate local type.
interface RouteDefinition {
  schema: unknown;
  method: string;
  url: string;
  httpPart?: string;
}
type Validator = ((data: unknown) => unknown) & { errors?: unknown };
type ValidatorPool = (
  externalSchemas: unknown,
  options?: { customOptions?: Record<string, unknown> },
) => (route: RouteDefinition) => Validator;
type Serializer = (data: unknown) => string;
type SerializerPool = (externalSchemas: unknown, options?: unknown) => (route: RouteDefinition) => Serializer;

const buildAjv = AjvCompiler() as unknown as ValidatorPool;
const buildFastJson = SerializerSelector() as unknown as SerializerPool;

/** A validator compiled at its first call; Fastify reads a failed validation's `errors` from the function. */
function validatorOnFirstUse(compile: () => Validator): Validator {
  let compiled: Validator | undefined;
  const validate: Validator = (data) => {
    compiled ??= compile();
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  return validate;
}

/**
 * Request bodies are taken as sent (a number is not a username); query and path strings are coerced. Neither
 * strips unknown properties (Fastify's default): an unknown query parameter is refused like an unknown body
 * field, rather than silently ignored. strictNumbers: ajv otherwise takes Infinity (JSON `1e400`, query
 * `1e400`) for an integer, and it reached the store.
 */
export const buildRequestValidator: ValidatorPool = (externalSchemas, ajvOptions) => {
  const strict = buildAjv(externalSchemas, {
    ...ajvOptions,
    customOptions: { ...ajvOptions?.customOptions, coerceTypes: false, removeAdditional: false, strictNumbers: true },
  });
  const coercing = buildAjv(externalSchemas, {
    ...ajvOptions,
    customOptions: { ...ajvOptions?.customOptions, removeAdditional: false, strictNumbers: true },
  });
  return (route) => validatorOnFirstUse(() => (route.httpPart === 'body' ? strict(route) : coercing(route)));
};

/** Fastify's own serializer (fast-json-stringify), each compiled at its first answer. */
export const buildResponseSerializer: SerializerPool = (externalSchemas, options) => {
  const compileFor = buildFastJson(externalSchemas, options);
  return (route) => {
    let compiled: Serializer | undefined;
    return (data) => (compiled ??= compileFor(route))(data);
  };
};
