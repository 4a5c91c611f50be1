/**
 * A failure of the diff engine: a repository that cannot be read or a
 * revision that does not exist. The message is meant for the reviewer; the
 * HTTP layer answers 500 with it (src/review/errors.ts#gitFailed).
 */
export class GitError extends Error {
  override readonly name = 'GitError';
}

/** The code and message of a thrown value, which need not be an Error at all. */
function errnoOf(cause: unknown): Partial<NodeJS.ErrnoException> {
  return typeof cause === 'object' && cause !== null ? cause : {};
}

/** Every message the diff engine produces, in one place. */
export const gitErrors = {
  notARepository: (dir: string) => new GitError(`Not a git repository: ${dir}`),
  repositoryMissing: (dir: string) => new GitError(`Repository directory does not exist: ${dir}`),
  noCommits: (what: string) => new GitError(`Cannot diff ${what}: the repository has no commits yet`),
  noDefaultBranch: () => new GitError('Cannot diff against the default branch: neither main nor master exists'),
  missingObject: (oid: string, cause?: unknown) => new GitError(`Missing git object ${oid}`, { cause }),
  unsupported: (what: string) => new GitError(`Unsupported repository layout: ${what}`),
  corrupt: (what: string) => new GitError(`Corrupt git data: ${what}`),
  unreadable: (what: string, cause: unknown) =>
    new GitError(`Cannot read ${what}: ${errnoOf(cause).code ?? errnoOf(cause).message ?? 'unknown error'}`, { cause }),
} as const;
