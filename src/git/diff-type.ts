/** The diffs the engine computes, by the names the review API uses (see README.md). */
export const DIFF_TYPES = ['uncommitted', 'staged', 'last-commit', 'vs main'] as const;
export type DiffType = (typeof DIFF_TYPES)[number];

/** Where the work tree stands: what a caller needs to name its diffs. */
export interface Branches {
  /** The checked-out branch; `HEAD` when detached. */
  currentBranch: string;
  /** `main` if it exists, else `master` (and `main` when neither does): the base of `vs main`. */
  defaultBranch: string;
}
