// Small building blocks shared by both review screens.
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, INBOX_URL, onHub } from '../api.ts';
import { renderComment } from '../markdown.ts';

/** Comment text rendered like the plan: sanitized Markdown, images through /api/image. */
export function RichText({ markdown, class: cls }: { markdown: string; class?: string }): JSX.Element {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    ref.current?.replaceChildren(renderComment(markdown));
  }, [markdown]);
  return <div class={`rich ${cls ?? ''}`} ref={ref} />;
}

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp']);

export interface EditorProps {
  label: string;
  value: string;
  onInput: (value: string) => void;
  onSubmit?: () => void;
  onCancel?: () => void;
  placeholder?: string;
  rows?: number;
  autoFocus?: boolean;
  code?: boolean;
  /** Accept pasted or dropped images (uploaded, then referenced as Markdown). */
  images?: boolean;
}

/** A labelled textarea: Ctrl/Cmd+Enter submits, Escape cancels, images paste in as uploads. */
export function Editor(props: EditorProps): JSX.Element {
  const id = useId();
  const ref = useRef<HTMLTextAreaElement>(null);
  const [status, setStatus] = useState('');
  useLayoutEffect(() => {
    if (props.autoFocus === true) ref.current?.focus();
  }, []);

  const insert = (text: string): void => {
    const el = ref.current;
    if (el === null) return;
    const at = el.selectionStart;
    const next = el.value.slice(0, at) + text + el.value.slice(el.selectionEnd);
    props.onInput(next);
    requestAnimationFrame(() => el.setSelectionRange(at + text.length, at + text.length));
  };

  const upload = async (files: File[]): Promise<void> => {
    const images = files.filter((f) => IMAGE_TYPES.has(f.type));
    if (images.length < files.length) setStatus('Only PNG, JPEG and WebP images can be attached.');
    for (const file of images) {
      setStatus(`Uploading ${file.name || 'image'}…`);
      try {
        const path = await api.upload(file, file.name || `pasted.${file.type.split('/')[1] ?? 'png'}`);
        insert(`\n![${(file.name || 'image').replace(/[[\]]/g, '')}](${path})\n`);
        setStatus('');
      } catch (error) {
        setStatus(`Upload failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  };

  const onPaste = (e: ClipboardEvent): void => {
    const files = [...(e.clipboardData?.files ?? [])];
    if (props.images !== true || files.length === 0) return;
    e.preventDefault();
    void upload(files);
  };
  const onDrop = (e: DragEvent): void => {
    const files = [...(e.dataTransfer?.files ?? [])];
    if (props.images !== true || files.length === 0) return;
    e.preventDefault();
    void upload(files);
  };
  const onKeyDown = (e: KeyboardEvent): void => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && props.onSubmit !== undefined) {
      e.preventDefault();
      e.stopPropagation();
      props.onSubmit();
    } else if (e.key === 'Escape' && props.onCancel !== undefined) {
      e.preventDefault();
      e.stopPropagation();
      props.onCancel();
    }
  };

  return (
    <div class="editor">
      <label for={id} class="sr-only">
        {props.label}
      </label>
      <textarea
        id={id}
        ref={ref}
        class={props.code === true ? 'code' : undefined}
        rows={props.rows ?? 3}
        value={props.value}
        placeholder={props.placeholder}
        onInput={(e) => props.onInput(e.currentTarget.value)}
        onKeyDown={onKeyDown}
        onPaste={onPaste}
        onDrop={onDrop}
        spellcheck={props.code !== true}
      />
      {props.images === true && (
        <div class="hint">
          <label class="link attach">
            Attach image
            <input
              type="file"
              accept="image/png,image/jpeg,image/webp"
              class="sr-only"
              onChange={(e) => {
                void upload([...(e.currentTarget.files ?? [])]);
                e.currentTarget.value = '';
              }}
            />
          </label>
          <span aria-live="polite">{status || 'Markdown; paste or drop images too. Ctrl/⌘+Enter saves.'}</span>
        </div>
      )}
    </div>
  );
}

/** A modal built on <dialog>: focus is trapped and Escape closes it natively. */
export function Modal(props: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  wide?: boolean;
}): JSX.Element {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useLayoutEffect(() => {
    const dialog = ref.current;
    if (dialog !== null && !dialog.open) dialog.showModal();
  }, []);
  return (
    <dialog
      ref={ref}
      class={props.wide === true ? 'modal wide' : 'modal'}
      aria-labelledby={titleId}
      onClose={props.onClose}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
    >
      <header class="modal-head">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" class="icon-btn" aria-label="Close" onClick={props.onClose}>
          ✕
        </button>
      </header>
      {props.children}
    </dialog>
  );
}

/**
 * Ctrl/Cmd+Enter anywhere on the page. The handler is read at key time, not
 * captured at registration: effects run after paint, a keypress may come first.
 */
export function useSubmitKey(handler: (() => void) | undefined): void {
  const latest = useRef(handler);
  latest.current = handler;
  useLayoutEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey) || latest.current === undefined || e.defaultPrevented) return;
      e.preventDefault();
      latest.current();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The screen after a decision: nothing left to click, so no second decision. */
export function Done(props: { title: string; detail: ComponentChildren }): JSX.Element {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <main class="done" data-testid="done">
      <div class="done-card">
        <div class="done-mark" aria-hidden="true">
          ✓
        </div>
        <h1 ref={ref} tabIndex={-1}>
          {props.title}
        </h1>
        <div class="done-detail">{props.detail}</div>
        {onHub ? (
          <p class="done-close">
            <a href={INBOX_URL}>Back to the inbox</a>
          </p>
        ) : (
          <p class="done-close">You can close this tab.</p>
        )}
      </div>
    </main>
  );
}

/** The frame of every annotation form: a header, the fields, Cancel and Add/Save. */
export function DraftForm(props: {
  label: string;
  head: ComponentChildren;
  isNew: boolean;
  canSave: boolean;
  onSave: () => void;
  onCancel: () => void;
  class?: string;
  children: ComponentChildren;
}): JSX.Element {
  return (
    <form
      class={`draft ${props.class ?? ''}`}
      aria-label={props.label}
      onSubmit={(e) => {
        e.preventDefault();
        props.onSave();
      }}
    >
      <div class="draft-head">{props.head}</div>
      {props.children}
      <div class="draft-actions">
        <button type="button" class="btn ghost small" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="submit" class="btn primary small" disabled={!props.canSave}>
          {props.isNew ? 'Add' : 'Save'}
        </button>
      </div>
    </form>
  );
}
