// The Markdown an agent receives: every annotated passage quoted with what the
// reviewer wants done about it, in document order, so it can act item by item.
import { codeInOrder, inDocumentOrder, type CodeAnnotation, type PlanAnnotation } from './annotations.ts';
import type { Side } from './diff-model.ts';

/** A fence longer than any backtick run inside the text, so the text can't close it. */
export function fenced(text: string, lang = ''): string {
  const longest = Math.max(2, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${lang}\n${text}\n${fence}`;
}

export function blockquote(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? '>' : `> ${line}`))
    .join('\n');
}

const planHeadings: Record<PlanAnnotation['kind'], string> = {
  comment: 'Comment',
  delete: 'Remove this',
  replace: 'Replace this',
  global: 'General comment',
};

function planItem(a: PlanAnnotation, n: number, noun = 'plan'): string {
  const parts = [`### ${n}. ${planHeadings[a.kind]}`];
  if (a.kind !== 'global') parts.push(blockquote(a.quote.trim()));
  const text = a.text.trim();
  if (a.kind === 'replace') {
    parts.push('Replace the quoted passage with:', fenced(text));
  } else if (a.kind === 'delete') {
    parts.push(
      text === ''
        ? `Remove the quoted passage from the ${noun}.`
        : `Remove the quoted passage from the ${noun}. ${text}`,
    );
  } else if (text !== '') {
    parts.push(text);
  }
  return parts.join('\n\n');
}

/** The deny feedback for a plan: empty when there is nothing to say. */
export function planFeedback(annotations: readonly PlanAnnotation[]): string {
  if (annotations.length === 0) return '';
  const items = inDocumentOrder(annotations).map((a, i) => planItem(a, i + 1));
  const count = annotations.length === 1 ? '1 item' : `${annotations.length} items`;
  return (
    [
      '# Plan review feedback',
      `The reviewer did not approve this plan yet. Address each of the ${count} below, then present the revised plan.`,
      ...items,
    ].join('\n\n') + '\n'
  );
}

/** The annotations of a document (`gatehouse annotate`) as Markdown: empty when there are none. */
export function documentFeedback(annotations: readonly PlanAnnotation[], file: string): string {
  if (annotations.length === 0) return '';
  const items = inDocumentOrder(annotations).map((a, i) => planItem(a, i + 1, 'document'));
  const count = annotations.length === 1 ? '1 item' : `${annotations.length} items`;
  return (
    [`# Review of ${file}`, `The reviewer annotated this document: ${count} below, in document order.`, ...items].join(
      '\n\n',
    ) + '\n'
  );
}

/** Looks up the text of lines on one side of a file, for quoting. */
export type LineLookup = (filePath: string, side: Side, start: number, end: number) => string[];

const codeHeadings: Record<CodeAnnotation['type'], string> = {
  comment: 'Comment',
  suggestion: 'Suggestion',
  concern: 'Concern',
};

const LANGS: Record<string, string> = {
  ts: 'ts',
  tsx: 'tsx',
  js: 'js',
  jsx: 'jsx',
  mjs: 'js',
  cjs: 'js',
  py: 'python',
  go: 'go',
  rs: 'rust',
  java: 'java',
  rb: 'ruby',
  sh: 'sh',
  bash: 'bash',
  json: 'json',
  yml: 'yaml',
  yaml: 'yaml',
  md: 'markdown',
  css: 'css',
  html: 'html',
  sql: 'sql',
  c: 'c',
  h: 'c',
  cpp: 'cpp',
  cs: 'csharp',
  kt: 'kotlin',
  swift: 'swift',
  php: 'php',
};

/** The fence language for a path, from its extension. */
export function languageOf(filePath: string): string {
  const ext = /\.([^./]+)$/.exec(filePath)?.[1]?.toLowerCase() ?? '';
  return LANGS[ext] ?? '';
}

function lineLabel(a: CodeAnnotation): string {
  const range = a.lineStart === a.lineEnd ? `line ${a.lineStart}` : `lines ${a.lineStart}-${a.lineEnd}`;
  return `${range} (${a.side === 'old' ? 'old version, before the change' : 'new version'})`;
}

function codeItem(a: CodeAnnotation, n: number, lookup: LineLookup): string {
  const lang = languageOf(a.filePath);
  const parts = [`### ${n}. ${codeHeadings[a.type]}: \`${a.filePath}\` ${lineLabel(a)}`];
  const quoted = lookup(a.filePath, a.side, a.lineStart, a.lineEnd);
  if (quoted.length > 0) parts.push(fenced(quoted.join('\n'), lang));
  const text = a.text?.trim() ?? '';
  if (text !== '') parts.push(text);
  if (a.type === 'suggestion' && a.suggestedCode !== undefined) {
    parts.push('Suggested code:', fenced(a.suggestedCode, lang));
  }
  return parts.join('\n\n');
}

/** The feedback text of a code review: the general comment, then every annotation with the code it points at. */
export function codeFeedback(
  annotations: readonly CodeAnnotation[],
  general: string,
  fileOrder: readonly string[],
  lookup: LineLookup,
): string {
  const parts = ['# Code review feedback'];
  if (general.trim() !== '') parts.push(general.trim());
  codeInOrder(annotations, fileOrder).forEach((a, i) => parts.push(codeItem(a, i + 1, lookup)));
  return parts.length === 1 ? '' : parts.join('\n\n') + '\n';
}
