/** The branch checked out in `dir`'s repository, as the hub's inbox shows it; '' outside a repository. */
export async function branchOf(dir: string, home: string): Promise<string> {
  try {
    const { GitRepository } = await import('../git/repository.ts');
    return (await GitRepository.open(dir, { home }).context()).currentBranch;
  } catch {
    return '';
  }
}
