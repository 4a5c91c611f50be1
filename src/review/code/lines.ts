import type { Context, Middleware } from 'koa';
import type { DiffType } from '../../git/diff-type.ts';
import { fileLines } from '../../git/lines.ts';
import type { DiffEngine } from '../../git/repository.ts';
import { LINE_SIDES, MAX_LINES_PER_REQUEST, type DiffLinesQuery, type DiffLinesResponse } from '../contract.ts';
import { reviewErrors } from '../errors.ts';
import { fromGit } from './git-errors.ts';

function parameter(query: Context['query'], name: string): string {
  const value = query[name];
  if (value === undefined || value === '') throw reviewErrors.missingParameter(name);
  if (typeof value !== 'string') throw reviewErrors.invalidParameter(name, 'given once');
  return value;
}

function lineNumber(query: Context['query'], name: string, min: number, expected: string): number {
  const text = parameter(query, name);
  const value = /^\d{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(value >= min)) throw reviewErrors.invalidParameter(name, expected);
  return value;
}

/** The query of `GET /api/diff/lines`, each parameter checked in the order a reader would. */
export function readLinesQuery(query: Context['query']): DiffLinesQuery {
  const path = parameter(query, 'path');
  const side = parameter(query, 'side');
  if (!LINE_SIDES.some((s) => s === side))
    throw reviewErrors.invalidParameter('side', `one of ${LINE_SIDES.join(', ')}`);
  const start = lineNumber(query, 'start', 1, 'an integer ≥ 1');
  const end = lineNumber(query, 'end', start, 'an integer ≥ start');
  if (end - start + 1 > MAX_LINES_PER_REQUEST) throw reviewErrors.rangeTooLong(MAX_LINES_PER_REQUEST);
  return { path, side: side as DiffLinesQuery['side'], start, end };
}

/**
 * `GET /api/diff/lines`: lines of one file of the current diff, on one side,
 * so the UI can show more context around a hunk. Only files the diff shows
 * are served, from the very tree, index or working file it compared; `end`
 * may run past the last line (the answer stops there, `totalLines` says where).
 */
export function diffLines(repo: Pick<DiffEngine, 'sideContent'>, currentType: () => DiffType): Middleware {
  return async (ctx: Context) => {
    const query = readLinesQuery(ctx.query);
    const type = currentType();
    const content = await fromGit(() => repo.sideContent(type, query.side, query.path));
    if (content === null) throw reviewErrors.notInDiff(query.path, query.side);
    const lines = fileLines(content);
    if (lines === null) throw reviewErrors.binaryLines(query.path);
    if (query.start > lines.length + 1) throw reviewErrors.rangePastEnd(query.start, lines.length);
    ctx.body = {
      path: query.path,
      side: query.side,
      start: query.start,
      lines: lines.slice(query.start - 1, query.end),
      totalLines: lines.length,
    } satisfies DiffLinesResponse;
  };
}
