// The login link's page (docs/desk.md): the token is the address's fragment, which no request
// carries. It leaves the address bar at once (a reload or a copied address cannot replay it),
// is posted once, and the desk opens with the session cookie the answer sets.
/* global document, location, history */
import { DESK_API, DeskError, post } from './desk-api.js';

const state = document.getElementById('login-state');
const token = decodeURIComponent(location.hash.slice(1));
history.replaceState(null, '', location.pathname);

async function login() {
  if (!token) {
    state.textContent = 'This address holds no login link. Ask your operator for one (scribed accounts login-link).';
    return;
  }
  try {
    await post(`${DESK_API}/login`, { token });
    state.textContent = 'Signed in. Opening the desk...';
    location.replace('/desk/');
  } catch (err) {
    state.textContent =
      err instanceof DeskError && err.status === 401
        ? 'This login link is not valid: it was already used, has expired or was mistyped. Ask your operator for a new one.'
        : `Could not sign in: ${err.message}`;
  }
}
void login();
