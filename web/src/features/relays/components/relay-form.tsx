import { useId, useState, type FormEvent } from 'react';
import { RELAY_TLS_MODES, type CreateRelayBody, type Relay, type RelayTlsMode, type UpdateRelayBody } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ErrorMessage } from '../../../components/ui/error-message';

/** The form's fields as typed; numbers stay text until sent ('' is "no limit" or "the default"). */
interface RelayFields {
  name: string;
  url: string;
  tls: RelayTlsMode | '';
  username: string;
  password: string;
  removeLogin: boolean;
  maxConnections: string;
  maxPerSecond: string;
  maxPerDay: string;
}

type FieldName = keyof RelayFields;

function fieldsOf(relay: Relay | undefined): RelayFields {
  const text = (value: number | null | undefined) => (value === null || value === undefined ? '' : String(value));
  return {
    name: relay?.name ?? '',
    url: relay?.url ?? '',
    tls: relay?.tls ?? '',
    username: '',
    password: '',
    removeLogin: false,
    maxConnections: text(relay?.maxConnections),
    maxPerSecond: text(relay?.maxPerSecond),
    maxPerDay: text(relay?.maxPerDay),
  };
}

const limitOf = (text: string) => (text.trim() === '' ? null : Number(text));

/** What a new relay sends: the fields left empty are the server's defaults. */
export function createBodyOf(fields: RelayFields): CreateRelayBody {
  const body: CreateRelayBody = { name: fields.name.trim(), url: fields.url.trim() };
  if (fields.tls !== '') body.tls = fields.tls;
  if (fields.username !== '' || fields.password !== '') body.credentials = { username: fields.username, password: fields.password };
  if (fields.maxConnections.trim() !== '') body.maxConnections = Number(fields.maxConnections);
  if (fields.maxPerSecond.trim() !== '') body.maxPerSecond = Number(fields.maxPerSecond);
  if (fields.maxPerDay.trim() !== '') body.maxPerDay = Number(fields.maxPerDay);
  return body;
}

/** What an edit sends: only what differs from the relay (PATCH), the login only when a new one is typed or removed. */
export function updateBodyOf(relay: Relay, fields: RelayFields): UpdateRelayBody {
  const body: UpdateRelayBody = {};
  if (fields.name.trim() !== relay.name) body.name = fields.name.trim();
  if (fields.url.trim() !== relay.url) body.url = fields.url.trim();
  if (fields.tls !== '' && fields.tls !== relay.tls) body.tls = fields.tls;
  if (fields.removeLogin) body.credentials = null;
  else if (fields.username !== '' || fields.password !== '') body.credentials = { username: fields.username, password: fields.password };
  if (fields.maxConnections.trim() !== '' && Number(fields.maxConnections) !== relay.maxConnections)
    body.maxConnections = Number(fields.maxConnections);
  if (limitOf(fields.maxPerSecond) !== relay.maxPerSecond) body.maxPerSecond = limitOf(fields.maxPerSecond);
  if (limitOf(fields.maxPerDay) !== relay.maxPerDay) body.maxPerDay = limitOf(fields.maxPerDay);
  return body;
}

/** The form field a refusal names (`body.maxPerSecond must be …`, `body.credentials.password …`), if one. */
export function fieldOfError(message: string): FieldName | null {
  const found = /\bbody\.(name|url|tls|credentials(?:\.(username|password))?|maxConnections|maxPerSecond|maxPerDay)\b/.exec(message);
  if (!found) return null;
  if (found[1]!.startsWith('credentials')) return found[2] === 'username' ? 'username' : 'password';
  return found[1] as FieldName;
}

interface RelayFormProps {
  /** The relay to edit; absent: a new one. */
  relay?: Relay;
  busy: boolean;
  /** The server's refusal, as it said it. */
  error: string | null;
  onCreate: (body: CreateRelayBody) => void;
  onUpdate: (relay: Relay, body: UpdateRelayBody) => void;
  onCancel: () => void;
}

/**
 * Add a relay, or edit one (docs/console.md §10.22): name, URL, TLS, login and limits. The password is a password
 * field, empty on an edit whatever is stored: a login is write-only, and the view only knows that one is set.
 */
export function RelayForm({ relay, busy, error, onCreate, onUpdate, onCancel }: RelayFormProps) {
  const [fields, setFields] = useState<RelayFields>(() => fieldsOf(relay));
  const id = useId();
  const errorId = `${id}-error`;
  const badField = error ? fieldOfError(error) : null;
  const set = (name: FieldName) => (value: string | boolean) => setFields((current) => ({ ...current, [name]: value }));
  // Each field says whether the refusal names it, and points to the sentence that does.
  const invalid = (name: FieldName) => (badField === name ? { 'aria-invalid': true, 'aria-describedby': errorId } : {});

  function submit(event: FormEvent) {
    event.preventDefault();
    if (relay) onUpdate(relay, updateBodyOf(relay, fields));
    else onCreate(createBodyOf(fields));
  }

  const title = relay ? `Edit ${relay.name}` : 'New relay';
  return (
    <form className="relays__form" onSubmit={submit} aria-label={title}>
      <div className="relays__form-row">
        <label className="panel__field">
          <span>Name</span>
          <input
            type="text"
            required
            maxLength={64}
            value={fields.name}
            onChange={(e) => set('name')(e.target.value)}
            data-autofocus
            {...invalid('name')}
          />
        </label>
        <label className="panel__field relays__url">
          <span>URL</span>
          <input
            type="text"
            required
            inputMode="url"
            spellCheck={false}
            placeholder="smtp://smtp.example.com:587"
            value={fields.url}
            onChange={(e) => set('url')(e.target.value)}
            {...invalid('url')}
          />
        </label>
        <label className="panel__field">
          <span>TLS</span>
          <select value={fields.tls} onChange={(e) => set('tls')(e.target.value)} {...invalid('tls')}>
            {relay ? null : <option value="">Default</option>}
            {RELAY_TLS_MODES.map((mode) => (
              <option key={mode} value={mode}>
                {mode}
              </option>
            ))}
          </select>
        </label>
      </div>
      <fieldset className="relays__login">
        <legend>Login {relay ? (relay.hasCredentials ? '(set; type a new one to replace it)' : '(none)') : '(optional)'}</legend>
        <label className="panel__field">
          <span>Username</span>
          <input
            type="text"
            autoComplete="off"
            spellCheck={false}
            value={fields.username}
            disabled={fields.removeLogin}
            onChange={(e) => set('username')(e.target.value)}
            {...invalid('username')}
          />
        </label>
        <label className="panel__field">
          <span>Password</span>
          <input
            type="password"
            autoComplete="new-password"
            value={fields.password}
            disabled={fields.removeLogin}
            onChange={(e) => set('password')(e.target.value)}
            {...invalid('password')}
          />
        </label>
        {relay?.hasCredentials ? (
          <label className="relays__check">
            <input type="checkbox" checked={fields.removeLogin} onChange={(e) => set('removeLogin')(e.target.checked)} />
            <span>Remove the login</span>
          </label>
        ) : null}
      </fieldset>
      <div className="relays__form-row">
        <label className="panel__field">
          <span>Connections</span>
          <input
            type="number"
            min={1}
            max={100}
            step={1}
            placeholder="5"
            value={fields.maxConnections}
            onChange={(e) => set('maxConnections')(e.target.value)}
            {...invalid('maxConnections')}
          />
        </label>
        <label className="panel__field">
          <span>Per second (empty: no limit)</span>
          <input
            type="number"
            min={1}
            step={1}
            value={fields.maxPerSecond}
            onChange={(e) => set('maxPerSecond')(e.target.value)}
            {...invalid('maxPerSecond')}
          />
        </label>
        <label className="panel__field">
          <span>Per day (empty: no quota)</span>
          <input
            type="number"
            min={1}
            step={1}
            value={fields.maxPerDay}
            onChange={(e) => set('maxPerDay')(e.target.value)}
            {...invalid('maxPerDay')}
          />
        </label>
      </div>
      <p className="muted relays__hint">
        Limits count per worker process: divide the provider&apos;s by the number of worker processes (docs/relays.md).
      </p>
      <ErrorMessage id={errorId} text={error} />
      <div className="panel__toolbar">
        <Button type="submit" variant="primary" size="small" disabled={busy}>
          {relay ? 'Save' : 'Add relay'}
        </Button>
        <Button size="small" variant="ghost" onClick={onCancel}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
