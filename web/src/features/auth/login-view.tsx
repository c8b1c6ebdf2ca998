import { useId, useState, type FormEvent } from 'react';
import { Button } from '../../components/ui/button';
import { useLogin, type LoginResult } from './api/login';

interface LoginViewProps {
  /** May return a promise: the Login button stays busy until it settles. */
  onLoggedIn: (result: LoginResult) => void | Promise<void>;
}

/** docs/console.md §2 login view. No client-side validation: empty values are sent as they are (docs/console.md §5). */
export function LoginView({ onLoggedIn }: LoginViewProps) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const loginMutation = useLogin(onLoggedIn);
  const usernameId = useId();
  const passwordId = useId();

  function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (loginMutation.isPending) return;
    loginMutation.mutate({ username, password });
  }

  return (
    <main className="login">
      <form className="login__card" onSubmit={handleSubmit} noValidate aria-labelledby="login-heading">
        <h1 id="login-heading" className="login__heading">
          LOGIN
        </h1>
        <div className="field">
          <label htmlFor={usernameId}>Username</label>
          <input
            id={usernameId}
            name="username"
            type="text"
            autoComplete="username"
            autoCapitalize="none"
            spellCheck={false}
            value={username}
            onChange={(event) => setUsername(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={passwordId}>Password</label>
          <input
            id={passwordId}
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(event) => setPassword(event.target.value)}
          />
        </div>
        <Button type="submit" variant="primary" className="login__submit" aria-busy={loginMutation.isPending}>
          Login
        </Button>
      </form>
    </main>
  );
}
