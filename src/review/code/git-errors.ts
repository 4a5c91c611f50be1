import { HttpError } from '../../http/errors.ts';
import { reviewErrors } from '../errors.ts';

/** Engine failures become a 500 that says what git could not do; an answer already decided passes as it is. */
export async function fromGit<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw reviewErrors.gitFailed(error);
  }
}
