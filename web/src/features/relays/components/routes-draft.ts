/**
 * The routes editor's draft (docs/console.md §10.22) as a pure reducer, so a unit test drives adding, moving and
 * removing rules without a browser: what the operator has changed since the routes were loaded or saved, turned
 * into `PUT /api/v1/routes`'s body, and a 400's field path turned back into the rule and field it names.
 */
import { DEFAULT_RELAY_NAME, LANES, type Lane, type Route, type RouteInput } from '@outbox/contract';

/** One rule as its fields hold it: text, with '' for "any". */
export interface DraftRule {
  /** Stable across moves, for React's keys and the fields' ids; not sent. */
  key: number;
  /** An application's id, or '' for any. */
  application: string;
  senderDomain: string;
  recipientDomain: string;
  lane: Lane | '';
  /** The primary relay, then its fallbacks in order. */
  relays: string[];
}

export type MatchField = 'application' | 'senderDomain' | 'recipientDomain' | 'lane';

export interface RoutesDraft {
  rules: DraftRule[];
  nextKey: number;
  /** The body the routes had when loaded or saved: the draft is changed when its own body differs. */
  savedBody: string;
}

export type DraftAction =
  | { type: 'reset'; routes: readonly Route[] }
  | { type: 'add'; relay: string }
  | { type: 'remove'; key: number }
  | { type: 'move'; key: number; by: -1 | 1 }
  | { type: 'setMatch'; key: number; field: MatchField; value: string }
  | { type: 'setRelay'; key: number; index: number; relay: string }
  | { type: 'addFallback'; key: number; relay: string }
  | { type: 'removeFallback'; key: number; index: number };

function ruleOf(route: Route, key: number): DraftRule {
  return {
    key,
    application: route.match.application === null ? '' : String(route.match.application),
    senderDomain: route.match.senderDomain ?? '',
    recipientDomain: route.match.recipientDomain ?? '',
    lane: route.match.lane ?? '',
    relays: [...route.relays],
  };
}

/** The rules' `PUT /api/v1/routes` body: trimmed, '' as null (any). */
export function routeInputsOf(rules: readonly DraftRule[]): RouteInput[] {
  const orNull = (text: string) => (text.trim() === '' ? null : text.trim());
  return rules.map((rule) => ({
    match: {
      application: rule.application === '' ? null : Number(rule.application),
      senderDomain: orNull(rule.senderDomain),
      recipientDomain: orNull(rule.recipientDomain),
      lane: rule.lane === '' ? null : rule.lane,
    },
    relays: rule.relays,
  }));
}

export function draftOf(routes: readonly Route[]): RoutesDraft {
  const rules = [...routes].sort((a, b) => a.position - b.position).map((route, index) => ruleOf(route, index + 1));
  return { rules, nextKey: rules.length + 1, savedBody: JSON.stringify(routeInputsOf(rules)) };
}

export function isChanged(draft: RoutesDraft): boolean {
  return JSON.stringify(routeInputsOf(draft.rules)) !== draft.savedBody;
}

const isLane = (value: string): value is Lane => (LANES as readonly string[]).includes(value);

export function routesDraftReducer(draft: RoutesDraft, action: DraftAction): RoutesDraft {
  const update = (key: number, change: (rule: DraftRule) => DraftRule): RoutesDraft => ({
    ...draft,
    rules: draft.rules.map((rule) => (rule.key === key ? change(rule) : rule)),
  });
  switch (action.type) {
    case 'reset':
      return draftOf(action.routes);
    case 'add': {
      // A new rule matches everything until told otherwise: added last, where a catch-all belongs.
      const rule: DraftRule = {
        key: draft.nextKey,
        application: '',
        senderDomain: '',
        recipientDomain: '',
        lane: '',
        relays: [action.relay],
      };
      return { ...draft, rules: [...draft.rules, rule], nextKey: draft.nextKey + 1 };
    }
    case 'remove':
      return { ...draft, rules: draft.rules.filter((rule) => rule.key !== action.key) };
    case 'move': {
      const from = draft.rules.findIndex((rule) => rule.key === action.key);
      const to = from + action.by;
      if (from < 0 || to < 0 || to >= draft.rules.length) return draft;
      const rules = [...draft.rules];
      [rules[from], rules[to]] = [rules[to]!, rules[from]!];
      return { ...draft, rules };
    }
    case 'setMatch':
      if (action.field === 'lane') {
        const lane = action.value;
        return update(action.key, (rule) => ({ ...rule, lane: isLane(lane) ? lane : '' }));
      }
      return update(action.key, (rule) => ({ ...rule, [action.field]: action.value }));
    case 'setRelay':
      return update(action.key, (rule) => ({ ...rule, relays: rule.relays.map((name, i) => (i === action.index ? action.relay : name)) }));
    case 'addFallback':
      return update(action.key, (rule) => ({ ...rule, relays: [...rule.relays, action.relay] }));
    case 'removeFallback':
      // The primary (index 0) stays: a route names at least one relay.
      return action.index === 0
        ? draft
        : update(action.key, (rule) => ({ ...rule, relays: rule.relays.filter((_, i) => i !== action.index) }));
  }
}

/** The first relay a new rule or fallback offers: one the rule does not name yet, else the default. */
export function nextRelayFor(used: readonly string[], names: readonly string[]): string {
  return [DEFAULT_RELAY_NAME, ...names].find((name) => !used.includes(name)) ?? DEFAULT_RELAY_NAME;
}

const FIELD_LABELS: Readonly<Record<MatchField, string>> = {
  application: 'application',
  senderDomain: 'sender domain',
  recipientDomain: 'recipient domain',
  lane: 'lane',
};

/** Where a refusal of `PUT /api/v1/routes` points: the rule (from 0) and its field, and the sentence to show. */
export interface RouteError {
  rule: number | null;
  /** A match field, `relays` (the whole list) or `relays[i]` (one relay). */
  field: MatchField | 'relays' | `relays[${number}]` | null;
  text: string;
}

const FIELD_PATH = /body\.routes\[(\d+)\](?:\.match\.(application|senderDomain|recipientDomain|lane)|\.(relays)(?:\[(\d+)\])?)?\s*/;

/**
 * Reads the server's 400 (`body.routes[1].match.senderDomain must be a domain such as …`) as "Rule 2, sender
 * domain: must be a domain such as …", with the rule and field, so the editor marks that field. A message that
 * names no rule is shown as it came.
 */
export function routeErrorOf(message: string): RouteError {
  const found = FIELD_PATH.exec(message);
  if (!found) return { rule: null, field: null, text: message };
  const rule = Number(found[1]);
  const matchField = found[2] as MatchField | undefined;
  const relayIndex = found[4] === undefined ? null : Number(found[4]);
  const field: RouteError['field'] = matchField ?? (found[3] ? (relayIndex === null ? 'relays' : `relays[${relayIndex}]`) : null);
  const where = matchField
    ? FIELD_LABELS[matchField]
    : relayIndex !== null
      ? relayIndex === 0
        ? 'primary relay'
        : `fallback ${relayIndex}`
      : found[3]
        ? 'relays'
        : null;
  const rest = (message.slice(0, found.index) + message.slice(found.index + found[0].length)).trim();
  return { rule, field, text: `Rule ${rule + 1}${where ? `, ${where}` : ''}: ${rest}` };
}
