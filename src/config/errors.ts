/** A configuration that must not start: the message names the offending key. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Runs convict's validation and rethrows its report as a ConfigError. */
export function validated<T extends { validate(options: { allowed: 'strict' }): unknown }>(config: T): T {
  try {
    config.validate({ allowed: 'strict' });
  } catch (error) {
    throw new ConfigError(`invalid configuration: ${(error as Error).message}`);
  }
  return config;
}
