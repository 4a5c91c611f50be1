// Reviewer settings kept in the page's localStorage, so per origin: every port
// of a host is its own origin, and a page on another port (which shares the
// host's cookies) cannot preset them. Pure: reads and writes go through the
// store passed in.
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

/** The part of `Storage` settings use (localStorage in the page, a Map-backed stand-in in tests). */
export interface SettingsStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

function coerce<K extends keyof Settings>(key: K, raw: string): Settings[K] | undefined {
  const fallback = defaultSettings[key];
  if (typeof fallback === 'boolean')
    return raw === '1' ? (true as Settings[K]) : raw === '0' ? (false as Settings[K]) : undefined;
  if (key === 'theme') return raw === 'auto' || raw === 'light' || raw === 'dark' ? (raw as Settings[K]) : undefined;
  if (key === 'diffLayout') return raw === 'unified' || raw === 'split' ? (raw as Settings[K]) : undefined;
  if (key === 'permissionMode')
    return (PERMISSION_MODES as readonly string[]).includes(raw) ? (raw as Settings[K]) : undefined;
  return raw as Settings[K];
}

/** Settings from the store; missing or invalid values fall back to the defaults. */
export function readSettings(store: Pick<SettingsStore, 'getItem'>): Settings {
  const settings: Settings = { ...defaultSettings };
  for (const key of Object.keys(defaultSettings) as (keyof Settings)[]) {
    const raw = store.getItem(PREFIX + key);
    if (raw === null) continue;
    const value = coerce(key, raw);
    if (value !== undefined) (settings as unknown as Record<string, unknown>)[key] = value;
  }
  return settings;
}

/** Writes each changed setting to the store. */
export function writeSettings(store: Pick<SettingsStore, 'setItem'>, changes: Partial<Settings>): void {
  for (const [key, value] of Object.entries(changes)) {
    store.setItem(PREFIX + key, typeof value === 'boolean' ? (value ? '1' : '0') : value);
  }
}

/** From the least to the most permissive. */
const PERMISSIVENESS: readonly PermissionMode[] = ['plan', 'default', 'acceptEdits', 'bypassPermissions'];

/**
 * The mode an approval starts at: the session's mode, except "plan" (Claude
 * Code is in plan mode while it asks to leave it), or the reviewer's last
 * choice when that is no more permissive. A more permissive mode is only ever
 * what the reviewer picks on the page itself.
 */
export function initialPermissionMode(saved: Settings['permissionMode'], session: string | undefined): PermissionMode {
  const known = (PERMISSION_MODES as readonly string[]).includes(session ?? '');
  const current = known && session !== 'plan' ? (session as PermissionMode) : 'default';
  return saved !== '' && PERMISSIVENESS.indexOf(saved) <= PERMISSIVENESS.indexOf(current) ? saved : current;
}

/** The tags field as a list: comma or space separated, `#` optional, no duplicates. */
export function parseTags(field: string): string[] {
  const tags = field
    .split(/[,\s]+/)
    .map((t) => t.replace(/^#/, '').trim())
    .filter((t) => t !== '');
  return [...new Set(tags)];
}
