// On a hub, a plan submitted again in the same session is its next version:
// what changed since the previous one (rendered, blocks added and removed
// marked) and the feedback that version got.
import { diffArrays } from 'diff';
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { VersionsResponse } from '../../../src/review/contract.ts';
import { api } from '../api.ts';
import { markdownBlocks } from '../markdown.ts';
import { RichText } from './common.tsx';

interface Block {
  kind: 'added' | 'removed' | 'same';
  markdown: string;
}

/** The two plans as a sequence of rendered blocks, each marked added, removed or unchanged. */
export function blockDiff(before: string, after: string): Block[] {
  return diffArrays(markdownBlocks(before), markdownBlocks(after)).flatMap((change) =>
    change.value.map((markdown): Block => {
      const kind = change.added ? 'added' : change.removed ? 'removed' : 'same';
      return { kind, markdown };
    }),
  );
}

export function VersionChanges({ plan }: { plan: string }): JSX.Element | null {
  const [versions, setVersions] = useState<VersionsResponse | undefined>();
  useEffect(() => {
    api.versions().then(setVersions, () => setVersions(undefined));
  }, []);
  const previous = versions?.previous;
  if (!versions || !previous || previous.plan === null) return null;
  const blocks = blockDiff(previous.plan, plan);
  const changed = blocks.filter((b) => b.kind !== 'same').length;
  return (
    <section class="versions" aria-label={`Changes since version ${previous.version}`}>
      <h2>
        Version {versions.version}: changes since version {previous.version}
        {previous.outcome && <span class={`badge outcome-${previous.outcome}`}>{previous.outcome}</span>}
      </h2>
      {previous.feedback && (
        <div class="versions-feedback" role="note" aria-label={`Feedback on version ${previous.version}`}>
          <h3>Feedback on version {previous.version}</h3>
          <RichText markdown={previous.feedback} />
        </div>
      )}
      <details open={changed > 0}>
        <summary>
          {changed === 0 ? 'No changes to the plan' : `${changed} block${changed === 1 ? '' : 's'} changed`}
        </summary>
        <div class="versions-diff">
          {blocks.map((b, i) =>
            b.kind === 'added' ? (
              <ins key={i} class="md-added" aria-label="Added">
                <RichText markdown={b.markdown} />
              </ins>
            ) : b.kind === 'removed' ? (
              <del key={i} class="md-removed" aria-label="Removed">
                <RichText markdown={b.markdown} />
              </del>
            ) : (
              <div key={i} class="md-same">
                <RichText markdown={b.markdown} />
              </div>
            ),
          )}
        </div>
      </details>
    </section>
  );
}
