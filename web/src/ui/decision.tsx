// The two decisions every review ends with, and the check before an approval
// that would drop the reviewer's comments.
import type { ComponentChildren, JSX } from 'preact';
import { Modal } from './common.tsx';

/** "Send feedback" and "Approve"; whichever Ctrl/Cmd+Enter triggers is drawn as the primary one. */
export function DecisionButtons(props: {
  count: number;
  feedbackFirst: boolean;
  busy: boolean;
  onFeedback: () => void;
  onApprove: () => void;
}): JSX.Element {
  const shortcut = (primary: boolean) =>
    primary ? { title: 'Ctrl/⌘+Enter', 'aria-keyshortcuts': 'Control+Enter Meta+Enter' } : {};
  return (
    <>
      <button
        type="button"
        class={props.feedbackFirst ? 'btn danger primary-action' : 'btn danger'}
        disabled={props.busy}
        onClick={props.onFeedback}
        {...shortcut(props.feedbackFirst)}
      >
        Send feedback{props.count > 0 ? ` (${props.count})` : ''}
      </button>
      <button
        type="button"
        class={props.feedbackFirst ? 'btn success' : 'btn success primary-action'}
        disabled={props.busy}
        onClick={props.onApprove}
        {...shortcut(!props.feedbackFirst)}
      >
        Approve
      </button>
    </>
  );
}

export function ConfirmApprove(props: {
  title: string;
  busy: boolean;
  onApprove: () => void;
  onClose: () => void;
  children: ComponentChildren;
}): JSX.Element {
  return (
    <Modal title={props.title} onClose={props.onClose}>
      <p class="modal-body">{props.children}</p>
      <footer class="modal-foot">
        <button type="button" class="btn ghost" onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" class="btn success" disabled={props.busy} onClick={props.onApprove}>
          Approve anyway
        </button>
      </footer>
    </Modal>
  );
}
