import { expect } from 'vitest';
import { ConfigError } from '../../src/config/errors.ts';

/** The message of the ConfigError `run` throws (a configuration that must not start). */
export function configFailure(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}
