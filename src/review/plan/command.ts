import type { CommandContext } from '../../command.ts';

export async function runPlan(_ctx: CommandContext): Promise<number> {
  throw new Error('not built yet');
}
