// Entry: find out which review this server holds (or whether the URL carries
// a shared plan) and show the matching screen.
import { render, type JSX } from 'preact';
import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
import type { PlanAnnotation } from './annotations.ts';
import { hubPage, INBOX_URL, loadReview, onHub, type DiffResponse, type DocumentResponse } from './api.ts';
import { decodeShare, isShareFragment } from './share.ts';
import { applyTheme } from './theme.ts';
import { CodeReview } from './ui/code-review.tsx';
import { errorText } from './ui/common.tsx';
import { Inbox, SignIn } from './ui/inbox.tsx';
import { PlanReview, type PlanReviewProps } from './ui/plan-review.tsx';
import { useSettings } from './use-settings.ts';
import './styles.css';

type Screen =
  | { kind: 'loading' }
  | { kind: 'error'; message: string }
  | { kind: 'plan'; data: PlanReviewProps['data']; shared?: { annotations: PlanAnnotation[] } }
  | { kind: 'code'; data: DiffResponse }
  | { kind: 'annotate'; data: DocumentResponse };

async function load(): Promise<Screen> {
  if (isShareFragment(location.hash)) {
    const shared = await decodeShare(location.hash);
    return {
      kind: 'plan',
      data: { plan: shared.plan, sharingEnabled: false },
      shared: { annotations: shared.annotations },
    };
  }
  return loadReview();
}

function App(): JSX.Element {
  const [settings, updateSettings] = useSettings();
  const [screen, setScreen] = useState<Screen>({ kind: 'loading' });
  // Before paint: a theme switch never shows a frame in the old colors.
  useLayoutEffect(() => applyTheme(settings.theme), [settings.theme]);
  useEffect(() => {
    // The tab's title says what waits there: handy with several reviews open.
    if (screen.kind === 'plan')
      document.title = `${screen.shared ? 'Shared plan' : 'Plan review'}: ${/^#\s+(.+)$/m.exec(screen.data.plan)?.[1]?.trim() ?? 'plan'}`;
    if (screen.kind === 'code')
      document.title = `Code review: ${screen.data.gitContext.currentBranch || screen.data.gitRef}`;
    if (screen.kind === 'annotate') document.title = `Annotate: ${screen.data.file}`;
  }, [screen]);
  useEffect(() => {
    const start = (): void => {
      load()
        .then(setScreen)
        .catch((e: unknown) => setScreen({ kind: 'error', message: errorText(e) }));
    };
    start();
    // A share link pasted into this tab's address bar only changes the fragment.
    const onHash = (): void => {
      if (isShareFragment(location.hash)) start();
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  switch (screen.kind) {
    case 'loading':
      return (
        <main class="center" aria-busy="true">
          <p class="muted">Loading the review…</p>
        </main>
      );
    case 'error':
      return (
        <main class="center">
          <div class="done-card" role="alert">
            <h1>This review is not available</h1>
            <p>{screen.message}</p>
            {onHub ? (
              <p>
                <a href={INBOX_URL}>Back to the inbox</a>
              </p>
            ) : (
              <p class="muted">The review may already be decided and its server closed.</p>
            )}
          </div>
        </main>
      );
    case 'plan':
      return (
        <PlanReview
          key={location.hash}
          data={screen.data}
          shared={screen.shared}
          settings={settings}
          updateSettings={updateSettings}
        />
      );
    case 'code':
      return <CodeReview data={screen.data} settings={settings} updateSettings={updateSettings} />;
    case 'annotate':
      return (
        <PlanReview
          data={{ plan: screen.data.document, origin: screen.data.origin, sharingEnabled: false }}
          annotate={{ file: screen.data.file, gate: screen.data.gate }}
          settings={settings}
          updateSettings={updateSettings}
        />
      );
  }
}

/** The hub's own pages: the inbox and the sign-in form, in the review UI's look and theme. */
function HubApp({ page }: { page: 'inbox' | 'sign-in' }): JSX.Element {
  const [settings, updateSettings] = useSettings();
  useLayoutEffect(() => applyTheme(settings.theme), [settings.theme]);
  return page === 'inbox' ? (
    <Inbox settings={settings} updateSettings={updateSettings} />
  ) : (
    <SignIn settings={settings} updateSettings={updateSettings} />
  );
}

render(
  hubPage === 'inbox' || hubPage === 'sign-in' ? <HubApp page={hubPage} /> : <App />,
  document.getElementById('app') as HTMLElement,
);
