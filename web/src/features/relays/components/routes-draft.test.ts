import { describe, expect, it } from 'vitest';
import { buildRoute } from '../../../test/factories';
import {
  draftOf,
  isChanged,
  nextRelayFor,
  routeErrorOf,
  routeInputsOf,
  routesDraftReducer,
  type DraftAction,
  type RoutesDraft,
} from './routes-draft';

const routes = [
  buildRoute({
    id: 11,
    position: 1,
    match: { application: null, senderDomain: null, recipientDomain: null, lane: 'bulk' },
    relays: ['bulk-relay'],
  }),
  buildRoute({
    id: 10,
    position: 0,
    match: { application: 3, senderDomain: 'shop.example', recipientDomain: '*.example.de', lane: null },
    relays: ['eu', 'default'],
  }),
];

const run = (draft: RoutesDraft, ...actions: DraftAction[]) => actions.reduce(routesDraftReducer, draft);
const relaysOf = (draft: RoutesDraft) => routeInputsOf(draft.rules).map((route) => route.relays.join(' > '));

describe('routes draft', () => {
  it('starts from the routes in their order, unchanged, and gives back the same body', () => {
    const draft = draftOf(routes);
    expect(relaysOf(draft)).toEqual(['eu > default', 'bulk-relay']);
    expect(isChanged(draft)).toBe(false);
    expect(routeInputsOf(draft.rules)).toEqual([
      { match: { application: 3, senderDomain: 'shop.example', recipientDomain: '*.example.de', lane: null }, relays: ['eu', 'default'] },
      { match: { application: null, senderDomain: null, recipientDomain: null, lane: 'bulk' }, relays: ['bulk-relay'] },
    ]);
  });

  it('adds a catch-all rule last, moves it up, and removes one; keys stay with their rules', () => {
    const start = draftOf(routes);
    const added = run(start, { type: 'add', relay: 'us' });
    expect(relaysOf(added)).toEqual(['eu > default', 'bulk-relay', 'us']);
    expect(routeInputsOf(added.rules)[2]!.match).toEqual({ application: null, senderDomain: null, recipientDomain: null, lane: null });
    expect(isChanged(added)).toBe(true);
    const newKey = added.rules[2]!.key;

    const moved = run(added, { type: 'move', key: newKey, by: -1 }, { type: 'move', key: newKey, by: -1 });
    expect(relaysOf(moved)).toEqual(['us', 'eu > default', 'bulk-relay']);
    // Past either end nothing moves.
    expect(run(moved, { type: 'move', key: newKey, by: -1 })).toBe(moved);
    expect(relaysOf(run(moved, { type: 'move', key: moved.rules[2]!.key, by: 1 }))).toEqual(relaysOf(moved));

    const removed = run(moved, { type: 'remove', key: moved.rules[1]!.key });
    expect(relaysOf(removed)).toEqual(['us', 'bulk-relay']);
    expect(removed.rules.map((rule) => rule.key)).toEqual([newKey, start.rules[1]!.key]);
  });

  it('edits match fields (trimmed, empty is any), relays and fallbacks; the primary cannot be removed', () => {
    const draft = draftOf(routes);
    const key = draft.rules[1]!.key;
    const edited = run(
      draft,
      { type: 'setMatch', key, field: 'recipientDomain', value: '  *.example.com ' },
      { type: 'setMatch', key, field: 'lane', value: '' },
      { type: 'setMatch', key, field: 'application', value: '7' },
      { type: 'setRelay', key, index: 0, relay: 'us' },
      { type: 'addFallback', key, relay: 'eu' },
      { type: 'addFallback', key, relay: 'default' },
      { type: 'removeFallback', key, index: 1 },
      { type: 'removeFallback', key, index: 0 },
    );
    expect(routeInputsOf(edited.rules)[1]).toEqual({
      match: { application: 7, senderDomain: null, recipientDomain: '*.example.com', lane: null },
      relays: ['us', 'default'],
    });
    // A lane that is not one is "any", never sent as is.
    expect(routeInputsOf(run(draft, { type: 'setMatch', key, field: 'lane', value: 'express' }).rules)[1]!.match.lane).toBeNull();
    // Back to what was loaded: unchanged again.
    expect(isChanged(run(edited, { type: 'reset', routes }))).toBe(false);
  });

  it('offers the first relay a rule does not name yet', () => {
    expect(nextRelayFor([], ['eu', 'us'])).toBe('default');
    expect(nextRelayFor(['default', 'eu'], ['eu', 'us'])).toBe('us');
    expect(nextRelayFor(['default', 'eu', 'us'], ['eu', 'us'])).toBe('default');
  });

  it('reads a refusal as the rule and field it names', () => {
    expect(routeErrorOf('body.routes[1].match.senderDomain must be a domain such as example.com or *.example.com.')).toEqual({
      rule: 1,
      field: 'senderDomain',
      text: 'Rule 2, sender domain: must be a domain such as example.com or *.example.com.',
    });
    expect(routeErrorOf('body.routes[0].relays[1] names no relay: gone.')).toEqual({
      rule: 0,
      field: 'relays[1]',
      text: 'Rule 1, fallback 1: names no relay: gone.',
    });
    expect(routeErrorOf('body.routes[2].relays names a relay twice.')).toMatchObject({
      rule: 2,
      field: 'relays',
      text: 'Rule 3, relays: names a relay twice.',
    });
    expect(routeErrorOf('body.routes[0].match.application names no application: 9.')).toMatchObject({ field: 'application' });
    expect(routeErrorOf('The mail store is not reachable right now.')).toEqual({
      rule: null,
      field: null,
      text: 'The mail store is not reachable right now.',
    });
  });
});
