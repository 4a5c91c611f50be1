// Minimal review page until the full UI lands: shows the plan or the diff and
// sends a decision through the API.
const app = document.getElementById('app') as HTMLElement;

async function api(path: string, body?: unknown): Promise<Record<string, unknown>> {
  const init: RequestInit = body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const response = await fetch(path, init);
  return (await response.json()) as Record<string, unknown>;
}

function button(label: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement('button');
  b.textContent = label;
  b.addEventListener('click', onClick);
  return b;
}

function done(): void {
  app.replaceChildren(Object.assign(document.createElement('p'), { textContent: 'Sent. You can close this tab.' }));
}

async function start(): Promise<void> {
  const plan = await fetch('/api/plan');
  const pre = document.createElement('pre');
  const feedback = Object.assign(document.createElement('textarea'), { placeholder: 'Feedback' });
  if (plan.ok) {
    pre.textContent = String(((await plan.json()) as { plan: string }).plan);
    app.replaceChildren(pre, feedback,
      button('Approve', () => void api('/api/approve', {}).then(done)),
      button('Deny', () => void api('/api/deny', { feedback: feedback.value || undefined }).then(done)));
    return;
  }
  const diff = await api('/api/diff');
  pre.textContent = String(diff['rawPatch']);
  app.replaceChildren(pre, feedback, button('Send', () => void api('/api/feedback', { feedback: feedback.value, annotations: [] }).then(done)));
}

void start();
