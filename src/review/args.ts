import { ConfigError } from '../config/errors.ts';
import type { REVIEW_FLAGS } from '../config/review.ts';

// Not an import: an ESM import of node:util evaluates every lazy part of it (30 of
// Node's own modules more), which each hook call, even one that passes at once, would pay.
const { parseArgs } = process.getBuiltinModule('node:util');

export type ReviewFlag = (typeof REVIEW_FLAGS)[number];

export interface ParsedReviewArgs {
  positionals: string[];
  /** The flags as `--name=value`, ready for loadReviewConfig's `args`. */
  configArgs: string[];
  help: boolean;
}

/**
 * Strict parsing of a review command's argv: only `flags` (each taking a
 * value, as `--flag v` or `--flag=v`) and `--help`; anything else is an error
 * naming the option and listing the accepted ones.
 */
export function parseReviewArgs(
  argv: string[],
  flags: readonly ReviewFlag[],
  maxPositionals: number,
): ParsedReviewArgs {
  const accepted = flags.map((f) => `--${f}`).join(', ');
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        ...Object.fromEntries(flags.map((f) => [f, { type: 'string' as const }])),
      },
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    const option = /'(-[^' ]*)/.exec((error as Error).message)?.[1];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION')
      throw new ConfigError(`unknown option ${option ?? ''} (accepted: ${accepted})`);
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') throw new ConfigError(`option ${option ?? ''} needs a value`);
    throw new ConfigError((error as Error).message);
  }
  if (parsed.positionals.length > maxPositionals) {
    throw new ConfigError(`unexpected argument ${JSON.stringify(parsed.positionals[maxPositionals])}`);
  }
  const configArgs = flags.flatMap((f) => {
    const value = (parsed.values as Record<string, unknown>)[f];
    return typeof value === 'string' ? [`--${f}=${value}`] : [];
  });
  return { positionals: parsed.positionals, configArgs, help: parsed.values.help === true };
}
