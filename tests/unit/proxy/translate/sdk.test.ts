/**
 * The official SDKs through the in-process proxy, each against an upstream of
 * every other protocol (the scripted upstream answers from the wire fixtures).
 */
import { afterAll, beforeAll } from 'vitest';
import { describeSdkMatrix } from '../../../support/sdk-matrix.ts';
import { API_KEY, startTranslatingProxy, type TranslatingProxy } from '../../../support/translating-proxy.ts';

let proxy: TranslatingProxy;
beforeAll(async () => {
  proxy = await startTranslatingProxy();
});
afterAll(async () => {
  await proxy.close();
});

describeSdkMatrix({ url: () => proxy.url, key: API_KEY, upstream: () => proxy.upstream });
