/**
 * The diff types, by the names the review API and the UI use (`branch` is
 * accepted by the API as an alias of `vs main`).
 */
export const DIFF_TYPES = ['uncommitted', 'staged', 'last-commit', 'vs main'] as const;
export type DiffType = (typeof DIFF_TYPES)[number];

/** A diff the reviewer can pick: `id` is what `POST /api/diff/switch` takes. */
export interface DiffOption {
  id: string;
  label: string;
}

/** Where the work tree stands, and the diffs it offers. */
export interface GitContext {
  /** The checked-out branch; `HEAD` when detached. */
  currentBranch: string;
  /** `main` if it exists, else `master` (and `main` when neither does). */
  defaultBranch: string;
  diffOptions: DiffOption[];
}
