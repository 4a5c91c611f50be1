// Plan review: read the plan, annotate passages, then approve or send feedback.
import type { JSX } from 'preact';
import { useCallback, useRef, useState } from 'preact/hooks';
import {
  inDocumentOrder,
  newId,
  removeById,
  upsert,
  type PlanAnnotation,
  type PlanAnnotationKind,
} from '../annotations.ts';
import { api, onHub, type ApproveRequest, type DecisionResponse, type PlanResponse } from '../api.ts';
import { documentFeedback, planFeedback } from '../feedback.ts';
import type { TocEntry } from '../markdown.ts';
import { PERMISSION_MODES, initialPermissionMode, parseTags, type PermissionMode, type Settings } from '../settings.ts';
import { encodeShare } from '../share.ts';
import type { TextIndex } from '../text-anchor.ts';
import { AgentPicker, useAgents } from './agents.tsx';
import { Done, DraftForm, Editor, Modal, RichText, errorText, useSubmitKey } from './common.tsx';
import { ConfirmApprove, DecisionButtons } from './decision.tsx';
import { FeedbackDialog } from './feedback-dialog.tsx';
import { PlanDocument, type Selected } from './plan-document.tsx';
import { PlanSettingsDialog } from './plan-settings.tsx';
import { Topbar } from './topbar.tsx';
import { VersionChanges } from './versions.tsx';

const MODE_LABEL: Record<PermissionMode, string> = {
  default: 'Ask before edits (default)',
  acceptEdits: 'Accept edits',
  plan: 'Stay in plan mode',
  bypassPermissions: 'Bypass permissions',
};

const KIND_LABEL: Record<PlanAnnotationKind, string> = {
  comment: 'Comment',
  delete: 'Delete',
  replace: 'Replace',
  global: 'General',
};

interface Draft {
  id: string | undefined;
  kind: PlanAnnotationKind;
  start: number;
  end: number;
  quote: string;
  text: string;
}

export interface PlanReviewProps {
  /** A shared link carries no origin: it is not tied to an agent. */
  data: Omit<PlanResponse, 'origin' | 'permissionMode'> & Partial<Pick<PlanResponse, 'origin' | 'permissionMode'>>;
  settings: Settings;
  updateSettings: (changes: Partial<Settings>) => void;
  /** A shared link: show the plan and annotations, decide nothing. */
  shared?: { annotations: PlanAnnotation[] };
  /**
   * A Markdown file under review (`gatehouse annotate`), not an agent's plan:
   * no agent settings; with a gate it is approved or denied, without one the
   * reviewer sends the annotations.
   */
  annotate?: { file: string; gate: boolean };
}

type Result = { decision: 'approved' | 'denied' | 'feedback'; response: DecisionResponse };

function approveBody(plan: string, s: Settings): ApproveRequest {
  const body: ApproveRequest = {
    planSave: { enabled: s.planSaveEnabled, ...(s.planSavePath.trim() ? { customPath: s.planSavePath.trim() } : {}) },
  };
  if (s.notevaultEnabled && s.notevaultPath.trim() !== '') {
    const tags = parseTags(s.notevaultTags);
    body.notevault = {
      vaultPath: s.notevaultPath.trim(),
      plan,
      ...(s.notevaultFolder.trim() ? { folder: s.notevaultFolder.trim() } : {}),
      ...(tags.length ? { tags } : {}),
    };
  }
  if (s.notememoEnabled) body.notememo = { plan };
  return body;
}

function excerpt(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function PlanReview(props: PlanReviewProps): JSX.Element {
  const { data, settings, annotate } = props;
  const readOnly = props.shared !== undefined;
  const noun = annotate ? 'document' : 'plan';
  const feedbackText = (): string =>
    annotate ? documentFeedback(annotations, annotate.file) : planFeedback(annotations);
  const [annotations, setAnnotations] = useState<PlanAnnotation[]>(props.shared?.annotations ?? []);
  const [activeId, setActiveId] = useState<string>();
  const [selected, setSelected] = useState<Selected>();
  const [draft, setDraft] = useState<Draft>();
  const [toc, setToc] = useState<TocEntry[]>([]);
  const [dialog, setDialog] = useState<'feedback' | 'settings' | 'share' | 'confirm-approve'>();
  const [shareUrl, setShareUrl] = useState('');
  const [permissionMode, setPermissionMode] = useState(() =>
    initialPermissionMode(settings.permissionMode, data.permissionMode),
  );
  const agents = useAgents(data.origin === 'opencode' && !readOnly && annotate === undefined);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [result, setResult] = useState<Result>();
  const index = useRef<TextIndex | undefined>(undefined);
  const scroller = useRef<HTMLElement>(null);

  const ordered = inDocumentOrder(annotations);

  const onReady = useCallback((idx: TextIndex, headings: TocEntry[]) => {
    index.current = idx;
    setToc(headings);
    // Shared annotations re-anchor by their quoted text if the offsets moved.
    setAnnotations((list) =>
      list.flatMap((a) => {
        if (a.kind === 'global') return [a];
        const at = idx.locate(a.quote, a.start, a.end);
        return at === undefined ? [] : [{ ...a, start: at[0], end: at[1] }];
      }),
    );
  }, []);

  const jumpTo = (a: PlanAnnotation): void => {
    setActiveId(a.id);
    const range = index.current?.rangeOf(a.start, a.end);
    const box = scroller.current;
    if (range === undefined || box === null) return;
    const rect = range.getBoundingClientRect();
    box.scrollTo({
      top: box.scrollTop + rect.top - box.getBoundingClientRect().top - box.clientHeight / 3,
      behavior: 'smooth',
    });
  };

  const startDraft = (kind: PlanAnnotationKind): void => {
    if (selected === undefined && kind !== 'global') return;
    const base = selected ?? { start: -1, end: -1, quote: '' };
    setDraft({
      id: undefined,
      kind,
      start: base.start,
      end: base.end,
      quote: base.quote,
      text: kind === 'replace' ? base.quote : '',
    });
    window.getSelection()?.removeAllRanges();
  };

  const saveDraft = (): void => {
    if (draft === undefined) return;
    if (draft.kind !== 'delete' && draft.text.trim() === '') return;
    const id = draft.id ?? newId('plan');
    setAnnotations((list) =>
      upsert(list, { id, kind: draft.kind, quote: draft.quote, start: draft.start, end: draft.end, text: draft.text }),
    );
    setDraft(undefined);
    setSelected(undefined);
    setActiveId(id);
  };

  const decide = async (decision: Result['decision'], feedback?: string): Promise<void> => {
    if (busy || result !== undefined) return;
    setBusy(true);
    setError('');
    try {
      const planSave = approveBody(data.plan, settings).planSave;
      const words = feedback?.trim() ? { feedback } : {};
      let response: DecisionResponse;
      if (annotate !== undefined) {
        // A document's review sends words only: no plan to save, no agent to steer.
        const notes = feedbackText();
        if (decision === 'feedback') response = await api.feedback(words);
        else if (decision === 'denied') response = await api.deny(words);
        else response = await api.approve(notes === '' ? {} : { feedback: notes });
      } else if (decision === 'denied') {
        response = await api.deny({ ...words, ...(planSave ? { planSave } : {}) });
      } else {
        const body = approveBody(data.plan, settings);
        if (data.origin === 'claude-code') body.permissionMode = permissionMode;
        if (data.origin === 'opencode') {
          if (agents.selected !== '') body.agentSwitch = agents.selected;
          const notes = planFeedback(annotations);
          if (notes !== '') body.feedback = notes;
        }
        response = await api.approve(body);
        if (
          response.notememoUrl !== undefined &&
          /^[a-z][a-z0-9+.-]*:/i.test(response.notememoUrl) &&
          !/^(javascript|data|vbscript):/i.test(response.notememoUrl)
        ) {
          window.location.assign(response.notememoUrl);
        }
      }
      setDialog(undefined);
      setResult({ decision, response });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const approve = (): void => {
    if (annotations.length > 0 && data.origin === 'claude-code' && annotate === undefined) setDialog('confirm-approve');
    else void decide('approved');
  };

  const decisionButtons = (
    <DecisionButtons
      count={annotations.length}
      feedbackFirst={annotations.length > 0}
      busy={busy}
      onFeedback={() => setDialog('feedback')}
      onApprove={approve}
    />
  );

  const openShare = async (): Promise<void> => {
    setShareUrl(`${location.origin}${location.pathname}#${await encodeShare({ plan: data.plan, annotations })}`);
    setDialog('share');
  };

  // Ctrl/Cmd+Enter: the primary action — feedback when there are annotations, else approve.
  useSubmitKey(
    readOnly || result !== undefined || dialog !== undefined || draft !== undefined
      ? undefined
      : () =>
          annotations.length > 0 || (annotate !== undefined && !annotate.gate) ? setDialog('feedback') : approve(),
  );

  if (result !== undefined) {
    const { response } = result;
    return (
      <Done
        title={
          result.decision === 'approved'
            ? `${annotate ? 'Document' : 'Plan'} approved`
            : result.decision === 'feedback'
              ? 'Annotations sent'
              : 'Feedback sent'
        }
        detail={
          <>
            <p>
              {annotate
                ? 'Your decision and annotations were returned to whoever asked for the review.'
                : result.decision === 'approved'
                  ? 'The agent was told to go ahead.'
                  : 'The agent received your feedback and will revise the plan.'}
            </p>
            {response.savedPath !== undefined && (
              <p>
                Plan saved to <code>{response.savedPath}</code>
              </p>
            )}
            {response.notevaultPath !== undefined && (
              <p>
                Note saved to <code>{response.notevaultPath}</code>
              </p>
            )}
            {response.notememoUrl !== undefined && (
              <p>
                <a href={response.notememoUrl}>Open the note in notememo</a>
              </p>
            )}
          </>
        }
      />
    );
  }

  return (
    <div class="app plan-app">
      <Topbar
        title={readOnly ? 'Shared plan' : annotate ? `Annotate ${annotate.file}` : 'Plan review'}
        origin={annotate ? undefined : data.origin}
        settings={settings}
        updateSettings={props.updateSettings}
      >
        {readOnly ? (
          <a class="btn" href={location.pathname}>
            Open the live review
          </a>
        ) : annotate?.gate === false ? (
          <button
            type="button"
            class="btn primary primary-action"
            disabled={busy}
            onClick={() => setDialog('feedback')}
            title="Ctrl/⌘+Enter"
            aria-keyshortcuts="Control+Enter Meta+Enter"
          >
            Send annotations{annotations.length > 0 ? ` (${annotations.length})` : ''}
          </button>
        ) : annotate ? (
          decisionButtons
        ) : (
          <>
            {data.origin === 'claude-code' && (
              <label class="field-inline">
                <span>After approval</span>
                <select
                  value={permissionMode}
                  aria-label="Permission mode after approval"
                  onChange={(e) => {
                    const mode = e.currentTarget.value as PermissionMode;
                    setPermissionMode(mode);
                    props.updateSettings({ permissionMode: mode });
                  }}
                >
                  {PERMISSION_MODES.map((m) => (
                    <option value={m} key={m}>
                      {MODE_LABEL[m]}
                    </option>
                  ))}
                </select>
              </label>
            )}
            {data.origin === 'opencode' && <AgentPicker state={agents} />}
            <button type="button" class="btn ghost" onClick={() => setDialog('settings')}>
              Settings
            </button>
            {data.sharingEnabled && (
              <button type="button" class="btn ghost" onClick={() => void openShare()}>
                Share
              </button>
            )}
            {decisionButtons}
          </>
        )}
      </Topbar>
      {error !== '' && (
        <div class="banner error" role="alert">
          Could not send the decision: {error}
        </div>
      )}
      {readOnly && (
        <div class="banner info">
          A shared plan with its annotations, opened from a link. Nothing here is sent anywhere.
        </div>
      )}
      <div class="columns">
        <nav class="toc" aria-label="Table of contents">
          <h2 class="side-title">Contents</h2>
          {toc.length === 0 ? (
            <p class="muted small">No headings</p>
          ) : (
            <ol>
              {toc.map((t) => (
                <li key={t.id} class={`lvl-${t.level}`}>
                  <a
                    href={`#${t.id}`}
                    onClick={(e) => {
                      e.preventDefault();
                      document.getElementById(t.id)?.scrollIntoView({ block: 'start' });
                    }}
                  >
                    {t.text}
                  </a>
                </li>
              ))}
            </ol>
          )}
        </nav>
        <main class="doc-scroll" ref={scroller}>
          {onHub && !readOnly && <VersionChanges plan={data.plan} />}
          <div class="doc-page">
            <PlanDocument
              plan={data.plan}
              annotations={annotations}
              activeId={activeId}
              onReady={onReady}
              onSelect={(s) => {
                if (!readOnly && draft === undefined) setSelected(s);
              }}
              onActivate={(id) => {
                setActiveId(id);
                document.getElementById(`ann-${id}`)?.scrollIntoView({ block: 'nearest' });
              }}
            />
            {selected !== undefined && draft === undefined && (
              <div
                class="sel-toolbar"
                role="toolbar"
                aria-label="Annotate selection"
                style={{ top: selected.top + 6, left: selected.left }}
                onMouseDown={(e) => e.preventDefault()}
              >
                <button type="button" onClick={() => startDraft('comment')}>
                  Comment
                </button>
                <button type="button" onClick={() => startDraft('delete')}>
                  Delete
                </button>
                <button type="button" onClick={() => startDraft('replace')}>
                  Replace
                </button>
              </div>
            )}
            {draft !== undefined && draft.kind !== 'global' && draft.id === undefined && selected !== undefined && (
              <div class="popover" style={{ top: selected.top + 6, left: selected.left }}>
                <PlanDraft
                  draft={draft}
                  onChange={setDraft}
                  onSave={saveDraft}
                  onCancel={() => {
                    setDraft(undefined);
                    setSelected(undefined);
                  }}
                />
              </div>
            )}
          </div>
        </main>
        <aside class="panel" aria-label="Annotations">
          <div class="panel-head">
            <h2 class="side-title">
              Annotations {annotations.length > 0 && <span class="count">{annotations.length}</span>}
            </h2>
            {!readOnly && (
              <button type="button" class="btn small" onClick={() => startDraft('global')}>
                + General comment
              </button>
            )}
          </div>
          {draft !== undefined && draft.kind === 'global' && draft.id === undefined && (
            <PlanDraft draft={draft} onChange={setDraft} onSave={saveDraft} onCancel={() => setDraft(undefined)} />
          )}
          {ordered.length === 0 && draft === undefined && (
            <p class="muted empty">
              {readOnly
                ? 'No annotations.'
                : `Select text in the ${noun} to comment on it, mark it for deletion or propose a replacement.`}
            </p>
          )}
          <ol class="ann-list">
            {ordered.map((a) => (
              <li
                key={a.id}
                id={`ann-${a.id}`}
                class={`ann kind-${a.kind}${a.id === activeId ? ' active' : ''}`}
                data-testid="annotation"
              >
                {draft?.id === a.id ? (
                  <PlanDraft
                    draft={draft}
                    onChange={setDraft}
                    onSave={saveDraft}
                    onCancel={() => setDraft(undefined)}
                  />
                ) : (
                  <>
                    <div class="ann-head">
                      <span class={`badge kind-${a.kind}`}>{KIND_LABEL[a.kind]}</span>
                      {a.kind !== 'global' && (
                        <button
                          type="button"
                          class="link"
                          onClick={() => jumpTo(a)}
                          aria-label={`Show in ${noun}: ${excerpt(a.quote, 60)}`}
                        >
                          Show in {noun}
                        </button>
                      )}
                    </div>
                    {a.kind !== 'global' && (
                      <blockquote class={a.kind === 'delete' ? 'quote struck' : 'quote'}>{excerpt(a.quote)}</blockquote>
                    )}
                    {a.kind === 'replace' ? (
                      <pre class="replacement">{a.text}</pre>
                    ) : (
                      a.text.trim() !== '' && <RichText markdown={a.text} />
                    )}
                    {!readOnly && (
                      <div class="ann-actions">
                        <button type="button" class="link" onClick={() => setDraft({ ...a, id: a.id })}>
                          Edit
                        </button>
                        <button
                          type="button"
                          class="link danger"
                          onClick={() => setAnnotations((l) => removeById(l, a.id))}
                        >
                          Remove
                        </button>
                      </div>
                    )}
                  </>
                )}
              </li>
            ))}
          </ol>
        </aside>
      </div>
      {dialog === 'feedback' && (
        <FeedbackDialog
          title={
            annotate
              ? annotate.gate
                ? 'Deny, with your feedback'
                : 'Send your annotations'
              : 'Send feedback to the agent'
          }
          initial={feedbackText()}
          placeholder={
            annotate
              ? 'What should change in the document? (may be empty)'
              : 'What should change in the plan? (empty: “Plan rejected by user”)'
          }
          busy={busy}
          error={error}
          onSend={(text) => void decide(annotate?.gate === false ? 'feedback' : 'denied', text)}
          onClose={() => setDialog(undefined)}
        />
      )}
      {dialog === 'settings' && (
        <PlanSettingsDialog settings={settings} update={props.updateSettings} onClose={() => setDialog(undefined)} />
      )}
      {dialog === 'share' && <ShareDialog url={shareUrl} onClose={() => setDialog(undefined)} />}
      {dialog === 'confirm-approve' && (
        <ConfirmApprove
          title="Approve without your annotations?"
          busy={busy}
          onApprove={() => void decide('approved')}
          onClose={() => setDialog(undefined)}
        >
          An approval tells Claude Code to go ahead; your {annotations.length} annotation
          {annotations.length === 1 ? '' : 's'} will not be sent. To have them addressed, send feedback instead.
        </ConfirmApprove>
      )}
    </div>
  );
}

function PlanDraft(props: {
  draft: Draft;
  onChange: (d: Draft) => void;
  onSave: () => void;
  onCancel: () => void;
}): JSX.Element {
  const { draft } = props;
  const labels: Record<PlanAnnotationKind, [string, string]> = {
    comment: ['Comment on the selection', 'What about this passage?'],
    delete: ['Why remove it (optional)', 'Why should this go? (optional)'],
    replace: ['Replacement text', 'The text that should stand here instead'],
    global: ['General comment', 'A comment on the plan as a whole'],
  };
  const [label, placeholder] = labels[draft.kind];
  return (
    <DraftForm
      label={label}
      isNew={draft.id === undefined}
      canSave={draft.kind === 'delete' || draft.text.trim() !== ''}
      onSave={props.onSave}
      onCancel={props.onCancel}
      head={
        <>
          <span class={`badge kind-${draft.kind}`}>{KIND_LABEL[draft.kind]}</span>
          {draft.quote !== '' && <span class="muted small clamp">“{excerpt(draft.quote, 80)}”</span>}
        </>
      }
    >
      <Editor
        label={label}
        placeholder={placeholder}
        value={draft.text}
        onInput={(text) => props.onChange({ ...draft, text })}
        onSubmit={props.onSave}
        onCancel={props.onCancel}
        autoFocus
        images={draft.kind !== 'replace'}
        rows={draft.kind === 'replace' ? 4 : 3}
      />
    </DraftForm>
  );
}

function ShareDialog(props: { url: string; onClose: () => void }): JSX.Element {
  const [copied, setCopied] = useState('');
  const input = useRef<HTMLInputElement>(null);
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(props.url);
      setCopied('Copied to the clipboard.');
    } catch {
      input.current?.select();
      setCopied('Select the link and copy it (the clipboard is not available on this page).');
    }
  };
  return (
    <Modal title="Share this review" onClose={props.onClose}>
      <div class="modal-body">
        <p>
          The link carries the plan and your annotations inside the URL fragment, compressed. Nothing is uploaded
          anywhere.
        </p>
        <label class="field">
          <span>Share link ({Math.ceil(props.url.length / 1024)} KB)</span>
          <input
            ref={input}
            readOnly
            value={props.url}
            onFocus={(e) => e.currentTarget.select()}
            data-testid="share-url"
          />
        </label>
        <p class="muted small" aria-live="polite">
          {copied}
        </p>
      </div>
      <footer class="modal-foot">
        <button type="button" class="btn primary" onClick={() => void copy()}>
          Copy link
        </button>
      </footer>
    </Modal>
  );
}
