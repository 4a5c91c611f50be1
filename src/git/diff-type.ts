/**
 * The diff types, by the names the review API and the UI use (`branch` is
 * accepted by the API as an alias of `vs main`).
 */
export const DIFF_TYPES = ['uncommitted', 'staged', 'last-commit', 'vs main'] as const;
export type DiffType = (typeof DIFF_TYPES)[number];
