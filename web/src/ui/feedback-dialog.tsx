// The generated feedback, shown before it is sent: the reviewer can edit the
// Markdown and preview it rendered.
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { Editor, Modal, RichText } from './common.tsx';

export interface FeedbackDialogProps {
  title: string;
  initial: string;
  placeholder: string;
  busy: boolean;
  error: string;
  onSend: (text: string) => void;
  onClose: () => void;
}

export function FeedbackDialog(props: FeedbackDialogProps): JSX.Element {
  const [text, setText] = useState(props.initial);
  const [tab, setTab] = useState<'edit' | 'preview'>('edit');
  return (
    <Modal title={props.title} onClose={props.onClose} wide>
      <div class="modal-body">
        <div class="tabs" role="tablist" aria-label="Feedback view">
          <button
            type="button"
            role="tab"
            aria-selected={tab === 'edit'}
            class={tab === 'edit' ? 'tab on' : 'tab'}
            onClick={() => setTab('edit')}
          >
            Edit
          </button>
          <button
            type="button"
            role="tab"
            aria-selected={tab === 'preview'}
            class={tab === 'preview' ? 'tab on' : 'tab'}
            onClick={() => setTab('preview')}
          >
            Preview
          </button>
        </div>
        {tab === 'edit' ? (
          <Editor
            label="Feedback (Markdown)"
            value={text}
            onInput={setText}
            onSubmit={() => props.onSend(text)}
            placeholder={props.placeholder}
            rows={16}
            autoFocus
            images
            code
          />
        ) : (
          <div class="preview markdown">
            {text.trim() === '' ? <p class="muted">{props.placeholder}</p> : <RichText markdown={text} />}
          </div>
        )}
        {props.error !== '' && (
          <p class="banner error" role="alert">
            {props.error}
          </p>
        )}
      </div>
      <footer class="modal-foot">
        <span class="muted small">Ctrl/⌘+Enter sends</span>
        <button type="button" class="btn ghost" onClick={props.onClose}>
          Cancel
        </button>
        <button
          type="button"
          class="btn danger"
          disabled={props.busy}
          onClick={() => props.onSend(text)}
          data-testid="send-feedback"
        >
          {props.busy ? 'Sending…' : 'Send feedback'}
        </button>
      </footer>
    </Modal>
  );
}
