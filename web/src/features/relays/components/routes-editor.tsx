import { useEffect, useId, useReducer, useRef, useState } from 'react';
import { DEFAULT_RELAY_NAME, LANES, type Application, type Route } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ErrorMessage } from '../../../components/ui/error-message';
import { PanelNotice } from '../../../components/ui/panel-notice';
import { errorText } from '../../../lib/api-client';
import { useApplications } from '../api/list-applications';
import { useRelays } from '../api/list-relays';
import { useRoutes } from '../api/list-routes';
import { useReplaceRoutes } from '../api/replace-routes';
import {
  draftOf,
  isChanged,
  nextRelayFor,
  routeErrorOf,
  routeInputsOf,
  routesDraftReducer,
  type DraftAction,
  type DraftRule,
  type MatchField,
  type RouteError,
} from './routes-draft';
import { RuleField, type InvalidProps } from './rule-field';

interface RoutesEditorProps {
  token: string;
  onClose: () => void;
}

/**
 * The routes editor (docs/console.md §10.22): the ordered rules from `GET /api/v1/routes`, edited as a draft
 * (match fields, the primary relay and its fallbacks; move up and down, add, remove) and saved as a whole with
 * `PUT /api/v1/routes`. A refusal is shown above the rules with the rule and field it names, and that field is
 * marked. It starts from the routes as this opening read them, so a refetch never overwrites what is typed.
 */
export function RoutesEditor({ token, onClose }: RoutesEditorProps) {
  const routes = useRoutes(token);
  if (!routes.isFetchedAfterMount || !routes.data) {
    return (
      <>
        <div className="panel__toolbar">
          <Button size="small" variant="ghost" onClick={onClose} data-autofocus>
            Close
          </Button>
        </div>
        <p className="muted">{routes.isError ? errorText(routes.error, 'The routes could not be loaded.') : 'Loading…'}</p>
      </>
    );
  }
  return <RoutesForm token={token} routes={routes.data} onClose={onClose} />;
}

function RoutesForm({ token, routes, onClose }: { token: string; routes: readonly Route[]; onClose: () => void }) {
  const relays = useRelays(token);
  const applications = useApplications(token);
  const save = useReplaceRoutes(token);
  const [draft, dispatchDraft] = useReducer(routesDraftReducer, routes, draftOf);
  const [notice, setNotice] = useState('');
  const id = useId();
  const errorId = `${id}-error`;
  const fieldId = (key: number, name: string) => `${id}-rule-${key}-${name}`;
  // After a move, focus follows the rule to its new place (the element moves with it, and a moved element loses focus).
  const focusAfterMove = useRef<string | null>(null);
  useEffect(() => {
    if (focusAfterMove.current === null) return;
    const button = document.getElementById(focusAfterMove.current);
    focusAfterMove.current = null;
    if (button instanceof HTMLButtonElement && !button.disabled) button.focus();
  });

  const relayNames = [...(relays.data ?? [])].map((relay) => relay.name).sort((a, b) => a.localeCompare(b));
  const refusal: RouteError | null = save.isError ? routeErrorOf(errorText(save.error, 'The routes could not be saved; try again.')) : null;
  const changed = isChanged(draft);

  function isInvalid(index: number, field: RouteError['field']): boolean {
    return refusal !== null && refusal.rule === index && refusal.field === field;
  }
  const invalid = (index: number, field: RouteError['field']): InvalidProps =>
    isInvalid(index, field) ? { 'aria-invalid': true, 'aria-describedby': errorId } : {};

  function submit() {
    setNotice('');
    save.mutate(
      { routes: routeInputsOf(draft.rules) },
      {
        onSuccess: (saved) => {
          dispatchDraft({ type: 'reset', routes: saved });
          setNotice(
            saved.length === 0
              ? 'Routes saved: none, every mail goes to the default relay.'
              : `Routes saved: ${saved.length} ${saved.length === 1 ? 'rule' : 'rules'}.`,
          );
        },
      },
    );
  }

  // A refusal names a rule by its place: once rules are added, removed or moved it would name another, so it goes.
  function dispatch(action: DraftAction) {
    if (save.isError && action.type !== 'setMatch' && action.type !== 'setRelay') save.reset();
    dispatchDraft(action);
  }

  /** A match field's value, its change and its mark when the refusal names it (rule `index` of the draft). */
  function matchField(rule: DraftRule, index: number, field: MatchField) {
    return {
      value: rule[field],
      onChange: (value: string) => dispatch({ type: 'setMatch', key: rule.key, field, value }),
      invalid: invalid(index, field),
    };
  }

  function move(rule: DraftRule, by: -1 | 1) {
    focusAfterMove.current = fieldId(rule.key, by === -1 ? 'up' : 'down');
    dispatch({ type: 'move', key: rule.key, by });
  }

  return (
    <form
      className="routes"
      aria-label="Routes"
      onSubmit={(event) => {
        event.preventDefault();
        submit();
      }}
    >
      <div className="panel__toolbar">
        <Button size="small" onClick={() => dispatch({ type: 'add', relay: nextRelayFor([], relayNames) })} data-autofocus>
          Add rule
        </Button>
        <Button type="submit" size="small" variant="primary" disabled={save.isPending || !changed}>
          Save routes
        </Button>
        <Button size="small" variant="ghost" disabled={!changed} onClick={() => dispatch({ type: 'reset', routes })}>
          Discard changes
        </Button>
        <Button size="small" variant="ghost" onClick={onClose}>
          Close
        </Button>
      </div>
      <PanelNotice text={changed ? 'Unsaved changes.' : notice} />
      <ErrorMessage id={errorId} text={refusal?.text} />
      <p className="muted relays__note">
        The first rule that matches a mail picks its relays: the primary, then its fallbacks in order while it is down. A mail no rule
        matches goes to the default relay (RELAY_URL). Domains match exactly, or any subdomain with *.example.com.
      </p>
      <div className="panel__scroll routes__scroll" tabIndex={0} role="region" aria-label="Route rules">
        {draft.rules.length === 0 ? (
          <p className="muted routes__empty">No routes: every mail goes to the default relay (RELAY_URL).</p>
        ) : (
          <ol className="routes__list">
            {draft.rules.map((rule, index) => {
              const number = index + 1;
              const choices = relayChoices(relayNames, rule.relays);
              return (
                <li key={rule.key} className="routes__rule">
                  <fieldset>
                    <legend>Rule {number}</legend>
                    <div className="routes__match">
                      <RuleField
                        label="Application"
                        choices={applicationChoices(applications.data ?? [], rule.application)}
                        {...matchField(rule, index, 'application')}
                      />
                      <RuleField label="Sender domain" placeholder="Any" {...matchField(rule, index, 'senderDomain')} />
                      <RuleField
                        label="Recipient domain"
                        placeholder="Any, or *.example.com"
                        {...matchField(rule, index, 'recipientDomain')}
                      />
                      <RuleField label="Lane" choices={LANE_CHOICES} {...matchField(rule, index, 'lane')} />
                    </div>
                    <div className="routes__relays" {...(isInvalid(index, 'relays') ? { 'aria-describedby': errorId } : {})}>
                      {rule.relays.map((name, position) => (
                        <span key={position} className="routes__relay">
                          <RuleField
                            label={position === 0 ? 'Primary relay' : `Fallback ${position}`}
                            value={name}
                            onChange={(relay) => dispatch({ type: 'setRelay', key: rule.key, index: position, relay })}
                            invalid={invalid(index, `relays[${position}]`)}
                            choices={choices}
                          />
                          {position > 0 ? (
                            <Button
                              size="small"
                              variant="ghost"
                              aria-label={`Remove fallback ${position} of rule ${number}`}
                              onClick={() => dispatch({ type: 'removeFallback', key: rule.key, index: position })}
                            >
                              ✕
                            </Button>
                          ) : null}
                        </span>
                      ))}
                      <Button
                        size="small"
                        variant="ghost"
                        aria-label={`Add a fallback to rule ${number}`}
                        onClick={() => dispatch({ type: 'addFallback', key: rule.key, relay: nextRelayFor(rule.relays, relayNames) })}
                      >
                        + Fallback
                      </Button>
                    </div>
                    <div className="routes__rule-buttons">
                      <Button
                        id={fieldId(rule.key, 'up')}
                        size="small"
                        variant="ghost"
                        aria-label={`Move rule ${number} up`}
                        disabled={index === 0}
                        onClick={() => move(rule, -1)}
                      >
                        ↑ Up
                      </Button>
                      <Button
                        id={fieldId(rule.key, 'down')}
                        size="small"
                        variant="ghost"
                        aria-label={`Move rule ${number} down`}
                        disabled={index === draft.rules.length - 1}
                        onClick={() => move(rule, 1)}
                      >
                        ↓ Down
                      </Button>
                      <Button
                        size="small"
                        variant="ghost"
                        aria-label={`Remove rule ${number}`}
                        onClick={() => dispatch({ type: 'remove', key: rule.key })}
                      >
                        Remove
                      </Button>
                    </div>
                  </fieldset>
                </li>
              );
            })}
          </ol>
        )}
      </div>
    </form>
  );
}

/** The relays a rule may name: the default, every named relay, and any the rule names that is not (any more) known. */
function relayChoices(names: readonly string[], used: readonly string[]): { value: string; label: string }[] {
  const known = [DEFAULT_RELAY_NAME, ...names];
  return [...known, ...used.filter((name) => !known.includes(name))].map((name) => ({
    value: name,
    label: name === DEFAULT_RELAY_NAME ? 'default (RELAY_URL)' : name,
  }));
}

const LANE_CHOICES = [{ value: '', label: 'Any lane' }, ...LANES.map((lane) => ({ value: lane, label: lane }))];

/** Any application, then applications by name, revoked ones marked, and the rule's own if it is not in the list. */
function applicationChoices(applications: readonly Application[], chosen: string): { value: string; label: string }[] {
  const options = [...applications]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((application) => ({
      value: String(application.id),
      label: application.revokedAt === null ? application.name : `${application.name} (revoked)`,
    }));
  if (chosen !== '' && !options.some((option) => option.value === chosen)) options.push({ value: chosen, label: `#${chosen}` });
  return [{ value: '', label: 'Any application' }, ...options];
}
