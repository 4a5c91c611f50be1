// Code review: browse the diff, annotate lines or ranges on either side, then
// send the feedback (or approve) to the agent.
import type { JSX } from 'preact';
import { useCallback, useMemo, useRef, useState } from 'preact/hooks';
import {
  codeInOrder,
  newId,
  removeById,
  upsert,
  type CodeAnnotation,
  type CodeAnnotationType,
} from '../annotations.ts';
import { CODE_APPROVAL } from '../../../src/review/contract.ts';
import {
  api,
  DIFF_TYPE_ALIASES,
  type DiffOption,
  type DiffResponse,
  type DiffSwitchRequest,
  type DiffType,
} from '../api.ts';
import { gapRange, showFile, withLines, type FileContext, type Gap } from '../diff-context.ts';
import { linesOf, parseDiff, type DiffLayout } from '../diff-model.ts';
import { viewRows, type LineSelection } from '../diff-rows.ts';
import { codeFeedback, type LineLookup } from '../feedback.ts';
import { buildTree } from '../file-tree-model.ts';
import type { Settings } from '../settings.ts';
import { AgentPicker, useAgents } from './agents.tsx';
import { Done, DraftForm, Editor, RichText, errorText, useSubmitKey } from './common.tsx';
import { ConfirmApprove, DecisionButtons } from './decision.tsx';
import { DiffView, type ExpandDirection } from './diff-view.tsx';
import { FeedbackDialog } from './feedback-dialog.tsx';
import { FileTree } from './file-tree.tsx';
import { Topbar } from './topbar.tsx';

const TYPE_LABEL: Record<CodeAnnotationType, string> = {
  comment: 'Comment',
  suggestion: 'Suggestion',
  concern: 'Concern',
};

interface Form {
  editingId: string | undefined;
  type: CodeAnnotationType;
  text: string;
  suggestedCode: string;
}

function rangeLabel(a: { lineStart: number; lineEnd: number; side: string }): string {
  const lines = a.lineStart === a.lineEnd ? `L${a.lineStart}` : `L${a.lineStart}–${a.lineEnd}`;
  return `${a.side === 'old' ? 'old' : 'new'} ${lines}`;
}

/** The option a diff type is offered under: its own id, else an alias of it (`branch` for `vs main`). */
function optionOf(type: DiffType, options: DiffOption[]): string {
  if (options.some((o) => o.id === type)) return type;
  return Object.entries(DIFF_TYPE_ALIASES).find(([, aliased]) => aliased === type)?.[0] ?? type;
}

export function CodeReview(props: {
  data: DiffResponse;
  settings: Settings;
  updateSettings: (c: Partial<Settings>) => void;
}): JSX.Element {
  const { data, settings } = props;
  const [diff, setDiff] = useState({ rawPatch: data.rawPatch, diffType: data.diffType, gitRef: data.gitRef });
  const parsed = useMemo(() => parseDiff(diff.rawPatch), [diff.rawPatch]);
  const tree = useMemo(() => buildTree(parsed), [parsed]);
  // Lines fetched around the hunks, per file path; the files as shown include them.
  const [context, setContext] = useState<ReadonlyMap<string, FileContext>>(new Map());
  const [expanding, setExpanding] = useState<ReadonlySet<number>>(new Set());
  const diffGeneration = useRef(0);
  const shown = useMemo(() => parsed.map((f) => showFile(f, context.get(f.path))), [parsed, context]);
  const files = useMemo(() => shown.map((s) => s.file), [shown]);
  const gapsOf = useCallback((f: number) => shown[f]?.gaps ?? [], [shown]);
  const layout: DiffLayout = settings.diffLayout;
  const [collapsed, setCollapsed] = useState<ReadonlySet<number>>(new Set());
  const [annotations, setAnnotations] = useState<CodeAnnotation[]>([]);
  const [selection, setSelection] = useState<LineSelection>();
  const [form, setForm] = useState<Form>();
  const [general, setGeneral] = useState('');
  const [scrollTo, setScrollTo] = useState<{ index: number; seq: number }>();
  const [current, setCurrent] = useState<number>();
  const [topRow, setTopRow] = useState(0);
  const [dialog, setDialog] = useState<'feedback' | 'confirm-approve'>();
  const [busy, setBusy] = useState(false);
  const [switching, setSwitching] = useState(false);
  const [error, setError] = useState('');
  const [done, setDone] = useState<'approved' | 'feedback'>();
  const agents = useAgents(data.origin === 'opencode');

  const rows = useMemo(
    () => viewRows(files, layout, collapsed, annotations, selection, form !== undefined, gapsOf),
    [files, layout, collapsed, annotations, selection, form !== undefined, gapsOf],
  );
  const byId = useMemo(() => new Map(annotations.map((a) => [a.id, a])), [annotations]);
  const fileOrder = useMemo(() => files.map((f) => f.path), [files]);
  const notesPerFile = useMemo(() => {
    const out = new Map<number, number>();
    for (const a of annotations) {
      const i = fileOrder.indexOf(a.filePath);
      if (i >= 0) out.set(i, (out.get(i) ?? 0) + 1);
    }
    return out;
  }, [annotations, fileOrder]);
  const lookup: LineLookup = (path, side, start, end) => {
    const file = files.find((f) => f.path === path);
    return file === undefined ? [] : linesOf(file, side, start, end);
  };

  const scrollToRow = (index: number): void => setScrollTo((s) => ({ index, seq: (s?.seq ?? 0) + 1 }));
  const openFile = (file: number): void => {
    setCurrent(file);
    if (collapsed.has(file)) setCollapsed((c) => new Set([...c].filter((x) => x !== file)));
    const index = rows.findIndex((r) => r.type === 'file' && r.file === file);
    if (index >= 0) scrollToRow(index);
  };

  const select = (sel: LineSelection): void => {
    setSelection(sel);
    const file = files[sel.file];
    setForm((f) => {
      const suggested = file === undefined ? '' : linesOf(file, sel.side, sel.start, sel.end).join('\n');
      if (f !== undefined && f.editingId === undefined)
        return { ...f, suggestedCode: f.type === 'suggestion' && f.suggestedCode !== '' ? f.suggestedCode : suggested };
      return { editingId: undefined, type: 'comment', text: '', suggestedCode: suggested };
    });
  };

  const closeForm = (): void => {
    setForm(undefined);
    setSelection(undefined);
  };

  const saveForm = (): void => {
    const file = selection === undefined ? undefined : files[selection.file];
    if (form === undefined || selection === undefined || file === undefined) return;
    if (form.text.trim() === '' && form.type !== 'suggestion') return;
    const annotation: CodeAnnotation = {
      id: form.editingId ?? newId('code'),
      type: form.type,
      filePath: file.path,
      lineStart: selection.start,
      lineEnd: selection.end,
      side: selection.side,
      ...(form.text.trim() !== '' ? { text: form.text } : {}),
      ...(form.type === 'suggestion' ? { suggestedCode: form.suggestedCode } : {}),
    };
    setAnnotations((list) => upsert(list, annotation));
    closeForm();
  };

  const edit = (a: CodeAnnotation): void => {
    const file = fileOrder.indexOf(a.filePath);
    if (file < 0) return;
    setSelection({ file, side: a.side, start: a.lineStart, end: a.lineEnd });
    setForm({ editingId: a.id, type: a.type, text: a.text ?? '', suggestedCode: a.suggestedCode ?? '' });
  };

  const reveal = (a: CodeAnnotation): void => {
    const index = rows.findIndex((r) => r.type === 'notes' && r.ids.includes(a.id));
    if (index >= 0) scrollToRow(Math.max(0, index - 3));
  };

  const expand = async (f: number, gap: Gap, direction: ExpandDirection): Promise<void> => {
    const file = files[f];
    if (file === undefined) return;
    const generation = diffGeneration.current;
    setExpanding((s) => new Set([...s, f]));
    try {
      const answer = await api.diffLines({ path: file.newPath, side: 'new', ...gapRange(gap, direction) });
      // An answer about the diff shown before a switch is dropped.
      if (generation === diffGeneration.current) {
        const { start, lines, totalLines } = answer;
        setContext((c) => new Map(c).set(file.path, withLines(c.get(file.path), start, lines, totalLines)));
      }
    } catch (e) {
      setError(`Could not show more lines of ${file.path}: ${errorText(e)}`);
    } finally {
      setExpanding((s) => new Set([...s].filter((x) => x !== f)));
    }
  };

  // The menu's values are the server's own option ids.
  const switchDiff = async (diffType: string): Promise<void> => {
    setSwitching(true);
    setError('');
    try {
      const next = await api.switchDiff(diffType as DiffSwitchRequest['diffType']);
      diffGeneration.current++;
      setDiff({ rawPatch: next.rawPatch, diffType: next.diffType, gitRef: next.gitRef });
      setContext(new Map());
      setCollapsed(new Set());
      closeForm();
      scrollToRow(0);
    } catch (e) {
      setError(`Could not switch the diff: ${errorText(e)}`);
    } finally {
      setSwitching(false);
    }
  };

  const send = async (feedback: string, approving: boolean): Promise<void> => {
    if (busy || done !== undefined) return;
    setBusy(true);
    setError('');
    try {
      await api.feedback({
        feedback,
        annotations: approving ? [] : codeInOrder(annotations, fileOrder),
        ...(agents.selected !== '' ? { agentSwitch: agents.selected } : {}),
      });
      setDialog(undefined);
      setDone(approving ? 'approved' : 'feedback');
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const hasFeedback = annotations.length > 0 || general.trim() !== '';
  const approve = (): void => {
    if (hasFeedback) setDialog('confirm-approve');
    else void send(CODE_APPROVAL, true);
  };

  useSubmitKey(
    done !== undefined || dialog !== undefined || form !== undefined
      ? undefined
      : () => (hasFeedback ? setDialog('feedback') : approve()),
  );

  if (done !== undefined) {
    return (
      <Done
        title={done === 'approved' ? 'Changes approved' : 'Review sent'}
        detail={
          <p>
            {done === 'approved'
              ? `The agent was told “${CODE_APPROVAL}”.`
              : `The agent received your feedback with ${annotations.length} annotation${annotations.length === 1 ? '' : 's'}.`}
          </p>
        }
      />
    );
  }

  const options = data.gitContext.diffOptions;
  const selectedOption = optionOf(diff.diffType, options);
  // A diff the server does not offer (`staged`, chosen with --diff-type) is still shown, by its name.
  const allOptions = options.some((o) => o.id === selectedOption)
    ? options
    : [{ id: selectedOption, label: selectedOption }, ...options];
  const adds = files.reduce((n, f) => n + f.additions, 0);
  const dels = files.reduce((n, f) => n + f.deletions, 0);
  const ordered = codeInOrder(annotations, fileOrder);
  // Deep inside a file its header has scrolled away: a bar keeps its name in view.
  const top = rows[topRow];
  const stickyFile = top === undefined || top.type === 'file' ? undefined : files[top.file];

  return (
    <div class="app code-app">
      <Topbar
        title="Code review"
        origin={data.origin}
        settings={settings}
        updateSettings={props.updateSettings}
        sub={
          <span class="chip mono" title={`git ${diff.gitRef}`}>
            {data.gitContext.currentBranch || 'detached'} · {diff.gitRef}
          </span>
        }
      >
        <label class="field-inline">
          <span>Diff</span>
          <select
            value={selectedOption}
            disabled={switching}
            onChange={(e) => void switchDiff(e.currentTarget.value)}
            aria-label="Diff type"
            data-testid="diff-type"
          >
            {allOptions.map((o) => (
              <option key={o.id} value={o.id}>
                {o.label}
              </option>
            ))}
          </select>
        </label>
        <div class="segmented" role="group" aria-label="Diff layout">
          {(['unified', 'split'] as const).map((l) => (
            <button
              key={l}
              type="button"
              aria-pressed={layout === l}
              class={layout === l ? 'on' : ''}
              onClick={() => props.updateSettings({ diffLayout: l })}
            >
              {l === 'unified' ? 'Unified' : 'Split'}
            </button>
          ))}
        </div>
        {data.origin === 'opencode' && <AgentPicker state={agents} />}
        <DecisionButtons
          count={annotations.length}
          feedbackFirst={hasFeedback}
          busy={busy}
          onFeedback={() => setDialog('feedback')}
          onApprove={approve}
        />
      </Topbar>
      {error !== '' && (
        <div class="banner error" role="alert">
          {error}
        </div>
      )}
      <div class="columns">
        <nav class="toc files" aria-label="Files">
          <h2 class="side-title">
            {files.length} file{files.length === 1 ? '' : 's'}{' '}
            <span class="stat">
              <span class="plus">+{adds}</span> <span class="minus">−{dels}</span>
            </span>
          </h2>
          <FileTree root={tree} current={current} notes={notesPerFile} onOpen={openFile} />
        </nav>
        <main class="diff-main">
          {files.length === 0 ? (
            <div class="empty-diff">
              <h2>No changes</h2>
              <p class="muted">
                <code>git diff {diff.gitRef}</code> is empty. Pick another diff above.
              </p>
            </div>
          ) : (
            <>
              {stickyFile !== undefined && (
                <div class="current-file" aria-hidden="true">
                  {stickyFile.path}
                </div>
              )}
              <DiffView
                onTopRow={(i) => {
                  setTopRow(i);
                  const row = rows[i];
                  if (row !== undefined) setCurrent(row.file);
                }}
                files={files}
                rows={rows}
                layout={layout}
                collapsed={collapsed}
                annotations={byId}
                selection={selection}
                scrollTo={scrollTo}
                onSelect={select}
                onExpand={(f, gap, direction) => void expand(f, gap, direction)}
                expanding={expanding}
                onToggleFile={(f) =>
                  setCollapsed((c) => (c.has(f) ? new Set([...c].filter((x) => x !== f)) : new Set([...c, f])))
                }
                renderNote={(a) => (
                  <div class={`note-card kind-${a.type}`} key={a.id} data-testid="code-note">
                    <div class="ann-head">
                      <span class={`badge kind-${a.type}`}>{TYPE_LABEL[a.type]}</span>
                      <span class="muted small">{rangeLabel(a)}</span>
                      <span class="grow" />
                      <button type="button" class="link" onClick={() => edit(a)}>
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
                    {a.text !== undefined && <RichText markdown={a.text} />}
                    {a.suggestedCode !== undefined && <pre class="suggested">{a.suggestedCode}</pre>}
                  </div>
                )}
                renderForm={() =>
                  form === undefined || selection === undefined ? (
                    <div />
                  ) : (
                    <CodeForm
                      form={form}
                      selection={selection}
                      onChange={setForm}
                      onSave={saveForm}
                      onCancel={closeForm}
                    />
                  )
                }
              />
            </>
          )}
        </main>
        <aside class="panel" aria-label="Review">
          <div class="panel-head">
            <h2 class="side-title">
              Review {annotations.length > 0 && <span class="count">{annotations.length}</span>}
            </h2>
          </div>
          <Editor
            label="General comment"
            value={general}
            onInput={setGeneral}
            placeholder="General comment on the change (optional)"
            rows={3}
            images
          />
          {ordered.length === 0 && (
            <p class="muted empty">Click a line number to comment on that line; shift+click or drag to take a range.</p>
          )}
          <ol class="ann-list">
            {ordered.map((a) => (
              <li key={a.id} class={`ann kind-${a.type}`}>
                <div class="ann-head">
                  <span class={`badge kind-${a.type}`}>{TYPE_LABEL[a.type]}</span>
                  <button type="button" class="link mono" onClick={() => reveal(a)}>
                    {a.filePath.split('/').pop()} {rangeLabel(a)}
                  </button>
                </div>
                {a.text !== undefined && <p class="clamp">{a.text}</p>}
              </li>
            ))}
          </ol>
        </aside>
      </div>
      {dialog === 'feedback' && (
        <FeedbackDialog
          title="Send review feedback"
          initial={codeFeedback(annotations, general, fileOrder, lookup)}
          placeholder="What should the agent change?"
          busy={busy}
          error={error}
          onSend={(text) => void send(text, false)}
          onClose={() => setDialog(undefined)}
        />
      )}
      {dialog === 'confirm-approve' && (
        <ConfirmApprove
          title="Approve without your comments?"
          busy={busy}
          onApprove={() => void send(CODE_APPROVAL, true)}
          onClose={() => setDialog(undefined)}
        >
          An approval sends “{CODE_APPROVAL}” only; your comments are dropped. To have them addressed, send feedback
          instead.
        </ConfirmApprove>
      )}
    </div>
  );
}

function CodeForm(props: {
  form: Form;
  selection: LineSelection;
  onChange: (f: Form) => void;
  onSave: () => void;
  onCancel: () => void;
}): JSX.Element {
  const { form, selection } = props;
  return (
    <DraftForm
      class="code-form"
      label="Comment on lines"
      isNew={form.editingId === undefined}
      canSave={form.type === 'suggestion' || form.text.trim() !== ''}
      onSave={props.onSave}
      onCancel={props.onCancel}
      head={
        <>
          <div class="segmented" role="radiogroup" aria-label="Annotation type">
            {(['comment', 'suggestion', 'concern'] as const).map((t) => (
              <button
                key={t}
                type="button"
                role="radio"
                aria-checked={form.type === t}
                class={form.type === t ? 'on' : ''}
                onClick={() => props.onChange({ ...form, type: t })}
              >
                {TYPE_LABEL[t]}
              </button>
            ))}
          </div>
          <span class="muted small">
            {rangeLabel({ lineStart: selection.start, lineEnd: selection.end, side: selection.side })} · shift+click a
            line number to extend
          </span>
        </>
      }
    >
      <Editor
        label="Comment"
        value={form.text}
        onInput={(text) => props.onChange({ ...form, text })}
        onSubmit={props.onSave}
        onCancel={props.onCancel}
        placeholder={
          form.type === 'concern'
            ? 'What worries you here?'
            : form.type === 'suggestion'
              ? 'Why this change? (optional)'
              : 'Leave a comment'
        }
        autoFocus
        images
      />
      {form.type === 'suggestion' && (
        <Editor
          label="Suggested code"
          value={form.suggestedCode}
          onInput={(suggestedCode) => props.onChange({ ...form, suggestedCode })}
          onSubmit={props.onSave}
          onCancel={props.onCancel}
          rows={4}
          code
        />
      )}
    </DraftForm>
  );
}
