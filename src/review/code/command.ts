import type { CommandContext } from '../../command.ts';

export async function runCodeReview(_ctx: CommandContext): Promise<number> {
  throw new Error('not built yet');
}
