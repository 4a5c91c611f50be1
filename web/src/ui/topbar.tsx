// The bar over both review screens: what this is, for which agent, the theme, and the actions.
import type { ComponentChildren, JSX } from 'preact';
import { hubPage, INBOX_URL, originLabel, type Origin } from '../api.ts';
import type { Settings } from '../settings.ts';
import { nextTheme, themeLabel } from '../theme.ts';

export function Topbar(props: {
  title: string;
  origin: Origin | undefined;
  settings: Settings;
  updateSettings: (changes: Partial<Settings>) => void;
  sub?: ComponentChildren;
  children: ComponentChildren;
}): JSX.Element {
  const theme = props.settings.theme;
  return (
    <header class="topbar">
      <div class="brand">
        {hubPage === 'review' && (
          <a class="btn ghost small" href={INBOX_URL}>
            ← Inbox
          </a>
        )}
        <span class="logo" aria-hidden="true">
          ◆
        </span>
        <h1>{props.title}</h1>
        {props.origin !== undefined && <span class="chip">{originLabel(props.origin)}</span>}
        {props.sub}
      </div>
      <div class="actions">
        {props.children}
        <button
          type="button"
          class="icon-btn"
          aria-label={`${themeLabel[theme]} (switch)`}
          title={themeLabel[theme]}
          onClick={() => props.updateSettings({ theme: nextTheme[theme] })}
        >
          {theme === 'dark' ? '☾' : theme === 'light' ? '☀' : '◐'}
        </button>
      </div>
    </header>
  );
}
