export { LoginView } from './login-view';
export { useSession, type Session } from './use-session';
export type { LoginResult } from './api/login';
