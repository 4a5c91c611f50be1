// Settings as Preact state, persisted to cookies on every change.
import { useCallback, useState } from 'preact/hooks';
import { readSettings, settingCookies, type Settings } from './settings.ts';

export function useSettings(): [Settings, (changes: Partial<Settings>) => void] {
  const [settings, setSettings] = useState(() => readSettings(document.cookie));
  const update = useCallback((changes: Partial<Settings>) => {
    for (const cookie of settingCookies(changes)) document.cookie = cookie;
    setSettings((s) => ({ ...s, ...changes }));
  }, []);
  return [settings, update];
}
