// Light and dark themes: "auto" follows the system, the toggle pins one.
import type { Settings } from './settings.ts';

export function applyTheme(theme: Settings['theme']): void {
  const root = document.documentElement;
  if (theme === 'auto') delete root.dataset['theme'];
  else root.dataset['theme'] = theme;
}

export const nextTheme: Record<Settings['theme'], Settings['theme']> = { auto: 'light', light: 'dark', dark: 'auto' };
export const themeLabel: Record<Settings['theme'], string> = {
  auto: 'Theme: system',
  light: 'Theme: light',
  dark: 'Theme: dark',
};
