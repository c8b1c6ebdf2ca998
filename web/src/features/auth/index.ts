export { LoginView } from './login-view';
export { useSession, type Session } from './use-session';
