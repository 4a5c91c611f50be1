// Reviewer settings kept in cookies: the server's port changes from run to
// run, and cookies (unlike localStorage) are scoped to the host, not the port.
// Pure: reads and writes go through the cookie string passed in.
import { PERMISSION_MODES, type PermissionMode } from '../../src/review/contract.ts';

export interface Settings {
  theme: 'auto' | 'light' | 'dark';
  planSaveEnabled: boolean;
  planSavePath: string;
  notevaultEnabled: boolean;
  notevaultPath: string;
  notevaultFolder: string;
  notevaultTags: string;
  notememoEnabled: boolean;
  diffLayout: 'unified' | 'split';
  /** The last permission mode chosen for an approval; '' until the reviewer picks one. */
  permissionMode: '' | PermissionMode;
}

export { PERMISSION_MODES, type PermissionMode };

export const defaultSettings: Settings = {
  theme: 'auto',
  planSaveEnabled: true,
  planSavePath: '',
  notevaultEnabled: false,
  notevaultPath: '',
  notevaultFolder: '',
  notevaultTags: 'plan, gatehouse',
  notememoEnabled: false,
  diffLayout: 'unified',
  permissionMode: '',
};

const PREFIX = 'gatehouse.';
const ONE_YEAR = 365 * 24 * 3600;

/** Cookie name → decoded value, ignoring malformed pairs. */
export function parseCookies(cookie: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of cookie.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const name = pair.slice(0, eq).trim();
    try {
      out.set(name, decodeURIComponent(pair.slice(eq + 1).trim()));
    } catch {
      // A cookie some other page wrote with bad escapes is not ours to fail on.
    }
  }
  return out;
}

function coerce<K extends keyof Settings>(key: K, raw: string): Settings[K] | undefined {
  const fallback = defaultSettings[key];
  if (typeof fallback === 'boolean') return raw === '1' ? (true as Settings[K]) : raw === '0' ? (false as Settings[K]) : undefined;
  if (key === 'theme') return raw === 'auto' || raw === 'light' || raw === 'dark' ? (raw as Settings[K]) : undefined;
  if (key === 'diffLayout') return raw === 'unified' || raw === 'split' ? (raw as Settings[K]) : undefined;
  if (key === 'permissionMode') return (PERMISSION_MODES as readonly string[]).includes(raw) ? (raw as Settings[K]) : undefined;
  return raw as Settings[K];
}

/** Settings from a `document.cookie` string; missing or invalid values fall back to the defaults. */
export function readSettings(cookie: string): Settings {
  const jar = parseCookies(cookie);
  const settings: Settings = { ...defaultSettings };
  for (const key of Object.keys(defaultSettings) as (keyof Settings)[]) {
    const raw = jar.get(PREFIX + key);
    if (raw === undefined) continue;
    const value = coerce(key, raw);
    if (value !== undefined) (settings as unknown as Record<string, unknown>)[key] = value;
  }
  return settings;
}

/** The `Set-Cookie`-style strings to assign to `document.cookie`, one per changed setting. */
export function settingCookies(changes: Partial<Settings>): string[] {
  return Object.entries(changes).map(([key, value]) => {
    const raw = typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
    return `${PREFIX}${key}=${encodeURIComponent(raw)}; Path=/; Max-Age=${ONE_YEAR}; SameSite=Lax`;
  });
}

/**
 * The mode an approval starts at: the reviewer's last choice, else the session's
 * mode, except "plan": Claude Code is in plan mode while it asks to leave it.
 */
export function initialPermissionMode(saved: Settings['permissionMode'], session: string | undefined): PermissionMode {
  if (saved !== '') return saved;
  return (PERMISSION_MODES as readonly string[]).includes(session ?? '') && session !== 'plan' ? (session as PermissionMode) : 'default';
}

/** The tags field as a list: comma or space separated, `#` optional, no duplicates. */
export function parseTags(field: string): string[] {
  const tags = field
    .split(/[,\s]+/)
    .map((t) => t.replace(/^#/, '').trim())
    .filter((t) => t !== '');
  return [...new Set(tags)];
}
