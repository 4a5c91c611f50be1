// The console's reads of the proxy's admin endpoints, typed by src/proxy/console/contract.ts. The admin key is
// kept for the tab's session (sessionStorage) and sent as a Bearer header: no cookie is ever set or read.
import {
  KEYS_PATH,
  LIVE_PATH,
  SPEND_PATH,
  UPSTREAMS_PATH,
  type ConsoleError,
  type KeysResponse,
  type LiveResponse,
  type SpendQuery,
  type SpendResponse,
  type UpstreamsResponse,
} from '../../src/proxy/console/contract.ts';

const STORED = 'gatehouse-console-key';

export const storedKey = (): string | null => sessionStorage.getItem(STORED);
export const keepKey = (key: string): void => sessionStorage.setItem(STORED, key);
export const forgetKey = (): void => sessionStorage.removeItem(STORED);

/** An answer other than 200: its status and the proxy's message. */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
  const key = storedKey();
  const search = new URLSearchParams(query).toString();
  const res = await fetch(search === '' ? path : `${path}?${search}`, {
    headers: key === null ? {} : { authorization: `Bearer ${key}` },
    credentials: 'omit',
  });
  if (!res.ok) {
    const body = (await res.json().catch(() => ({ error: res.statusText }))) as ConsoleError;
    throw new ApiError(res.status, body.error);
  }
  return (await res.json()) as T;
}

export const api = {
  spend: (q: SpendQuery) => get<SpendResponse>(SPEND_PATH, { ...q }),
  keys: () => get<KeysResponse>(KEYS_PATH),
  upstreams: () => get<UpstreamsResponse>(UPSTREAMS_PATH),
  live: () => get<LiveResponse>(LIVE_PATH),
};
