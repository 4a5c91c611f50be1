/**
 * A model-name glob as upstreams' `models`, key rules and prices write it: `*` any run of characters, `?` exactly
 * one; everything else literal.
 */
export function globToRegExp(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`);
}

export function isGlob(pattern: string): boolean {
  return /[*?]/.test(pattern);
}
