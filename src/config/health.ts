import convict from 'convict';
import { validated } from './errors.ts';
import { registerFormats } from './formats.ts';
import { PROXY_PORT, REVIEW_REMOTE_PORT } from './ports.ts';

registerFormats();

export interface HealthTarget {
  service: 'review' | 'proxy';
  url: string;
  headers: Record<string, string>;
}

/** Where the container's own services listen, from the same env vars they read. */
export function loadHealthTargets(env: NodeJS.ProcessEnv): HealthTarget[] {
  const config = validated(
    convict(
      {
        review_port: { format: 'port', default: REVIEW_REMOTE_PORT, env: 'SERVICE_PORT' },
        proxy_port: { format: 'port', default: PROXY_PORT, env: 'PROXY_PORT' },
        proxy_api_key: { format: String, default: '', env: 'PROXY_API_KEY', sensitive: true },
      },
      { env, args: [] },
    ),
  );
  const key = config.get('proxy_api_key');
  return [
    {
      service: 'proxy',
      url: `http://127.0.0.1:${config.get('proxy_port')}/healthz`,
      headers: key ? { authorization: `Bearer ${key}` } : {},
    },
    { service: 'review', url: `http://127.0.0.1:${config.get('review_port')}/`, headers: {} },
  ];
}
