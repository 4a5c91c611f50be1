import { describe, expect, it } from 'vitest';
import {
  defaultSettings,
  initialPermissionMode,
  parseTags,
  readSettings,
  writeSettings,
} from '../../../web/src/settings.ts';

/** A Map standing in for the page's localStorage. */
function memoryStore(entries: Record<string, string> = {}) {
  const map = new Map(Object.entries(entries));
  return {
    map,
    getItem: (key: string) => map.get(key) ?? null,
    setItem: (key: string, value: string) => void map.set(key, value),
  };
}

describe('stored settings', () => {
  it('reads defaults from an empty store', () => {
    expect(readSettings(memoryStore())).toEqual(defaultSettings);
  });

  it('round-trips every setting through the store', () => {
    const changes = {
      theme: 'dark',
      permissionMode: 'acceptEdits',
      planSaveEnabled: false,
      planSavePath: '/home/me/plans; x=1',
      notevaultTags: 'a, b #c',
      notememoEnabled: true,
      diffLayout: 'split',
    } as const;
    const store = memoryStore({ other: '1' });
    writeSettings(store, changes);
    expect(readSettings(store)).toEqual({ ...defaultSettings, ...changes });
    expect(store.map.get('gatehouse.planSaveEnabled')).toBe('0');
  });

  it('ignores invalid values', () => {
    expect(readSettings(memoryStore({ 'gatehouse.permissionMode': 'yolo' })).permissionMode).toBe('');
    const invalid = memoryStore({ 'gatehouse.theme': 'pink', 'gatehouse.planSaveEnabled': 'yes' });
    invalid.setItem('gatehouse.diffLayout', '');
    expect(readSettings(invalid)).toEqual(defaultSettings);
  });

  it('splits tags on commas and spaces, drops # and duplicates', () => {
    expect(parseTags(' plan, #api  gateway,plan ,, ')).toEqual(['plan', 'api', 'gateway']);
    expect(parseTags('')).toEqual([]);
  });
});

describe('initial permission mode', () => {
  it("is the session's mode, never plan mode by default, or the reviewer's last choice when no more permissive", () => {
    // A page on another origin could have stored the choice: never more permissive than the agent's mode.
    expect(initialPermissionMode('bypassPermissions', 'default')).toBe('default');
    expect(initialPermissionMode('acceptEdits', 'plan')).toBe('default');
    expect(initialPermissionMode('acceptEdits', 'bypassPermissions')).toBe('acceptEdits');
    expect(initialPermissionMode('default', 'acceptEdits')).toBe('default');
    expect(initialPermissionMode('', 'acceptEdits')).toBe('acceptEdits');
    expect(initialPermissionMode('', 'plan')).toBe('default');
    expect(initialPermissionMode('', undefined)).toBe('default');
    expect(initialPermissionMode('', 'weird')).toBe('default');
    expect(initialPermissionMode('plan', 'acceptEdits')).toBe('plan');
  });
});
