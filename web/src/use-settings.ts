// Settings as Preact state, persisted to localStorage (per origin) on every change.
import { useCallback, useState } from 'preact/hooks';
import { readSettings, writeSettings, type Settings, type SettingsStore } from './settings.ts';

/** localStorage, or nothing kept when the browser refuses it (storage disabled). */
function store(): SettingsStore {
  try {
    return window.localStorage;
  } catch {
    return { getItem: () => null, setItem: () => undefined };
  }
}

export function useSettings(): [Settings, (changes: Partial<Settings>) => void] {
  const [settings, setSettings] = useState(() => readSettings(store()));
  const update = useCallback((changes: Partial<Settings>) => {
    try {
      writeSettings(store(), changes);
    } catch {
      // A full or disabled store keeps the change for this page only.
    }
    setSettings((s) => ({ ...s, ...changes }));
  }, []);
  return [settings, update];
}
