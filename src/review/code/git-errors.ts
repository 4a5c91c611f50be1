import { reviewErrors } from '../errors.ts';

/** Engine failures become a 500 that says what git could not do. */
export async function fromGit<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw reviewErrors.gitFailed(error);
  }
}
