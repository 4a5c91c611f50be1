import { describe, expect, it } from 'vitest';
import { defaultSettings, initialPermissionMode, parseCookies, parseTags, readSettings, settingCookies } from '../../../web/src/settings.ts';

describe('cookie settings', () => {
  it('reads defaults from an empty jar', () => {
    expect(readSettings('')).toEqual(defaultSettings);
  });

  it('round-trips every setting through the cookie strings it writes', () => {
    const changes = { theme: 'dark', permissionMode: 'acceptEdits', planSaveEnabled: false, planSavePath: '/home/me/plans; x=1', notevaultTags: 'a, b #c', notememoEnabled: true, diffLayout: 'split' } as const;
    const jar = settingCookies(changes)
      .map((c) => c.split(';')[0])
      .join('; ');
    expect(readSettings(`other=1; ${jar}`)).toEqual({ ...defaultSettings, ...changes });
  });

  it('writes host-wide, long-lived cookies (the port changes from run to run)', () => {
    const [cookie] = settingCookies({ theme: 'light' });
    expect(cookie).toBe('gatehouse.theme=light; Path=/; Max-Age=31536000; SameSite=Lax');
  });

  it('ignores invalid values and malformed pairs', () => {
    expect(readSettings('gatehouse.permissionMode=yolo').permissionMode).toBe('');
    expect(readSettings('gatehouse.theme=pink; gatehouse.planSaveEnabled=yes; gatehouse.diffLayout=%E0%A4%A; junk')).toEqual(defaultSettings);
    expect(parseCookies('a=%41; b; c=1=2')).toEqual(new Map([['a', 'A'], ['c', '1=2']]));
  });

  it('splits tags on commas and spaces, drops # and duplicates', () => {
    expect(parseTags(' plan, #api  gateway,plan ,, ')).toEqual(['plan', 'api', 'gateway']);
    expect(parseTags('')).toEqual([]);
  });
});

describe('initial permission mode', () => {
  it("is the reviewer's last choice, else the session's mode, but never plan mode by default", () => {
    expect(initialPermissionMode('bypassPermissions', 'default')).toBe('bypassPermissions');
    expect(initialPermissionMode('', 'acceptEdits')).toBe('acceptEdits');
    expect(initialPermissionMode('', 'plan')).toBe('default');
    expect(initialPermissionMode('', undefined)).toBe('default');
    expect(initialPermissionMode('', 'weird')).toBe('default');
    expect(initialPermissionMode('plan', 'acceptEdits')).toBe('plan');
  });
});
