// Share links: the plan and its annotations, deflated and base64url-encoded in
// the URL fragment. A fragment never leaves the browser, so sharing sends
// nothing to any server.
import { isPlanAnnotation, type PlanAnnotation } from './annotations.ts';

export interface SharedPlan {
  plan: string;
  annotations: PlanAnnotation[];
}

const FRAGMENT_KEY = 'share=';
const VERSION = 1;

async function pipe(bytes: Uint8Array, stream: CompressionStream | DecompressionStream): Promise<Uint8Array> {
  const out = new Response(new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(stream));
  return new Uint8Array(await out.arrayBuffer());
}

export function toBase64Url(bytes: Uint8Array): string {
  let binary = '';
  // Chunks keep String.fromCharCode's argument count bounded on large plans.
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function fromBase64Url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error('The share link is damaged (not base64url).');
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/** The fragment (without `#`) that carries a plan and its annotations. */
export async function encodeShare(shared: SharedPlan): Promise<string> {
  const json = JSON.stringify({ v: VERSION, plan: shared.plan, annotations: shared.annotations });
  const packed = await pipe(new TextEncoder().encode(json), new CompressionStream('deflate-raw'));
  return FRAGMENT_KEY + toBase64Url(packed);
}

/** Whether a location hash (with or without `#`) is a share link. */
export function isShareFragment(hash: string): boolean {
  return hash.replace(/^#/, '').startsWith(FRAGMENT_KEY);
}

/** Reads a share fragment back; a damaged or foreign fragment is an Error with a message a reader can act on. */
export async function decodeShare(hash: string): Promise<SharedPlan> {
  const body = hash.replace(/^#/, '');
  if (!body.startsWith(FRAGMENT_KEY)) throw new Error('This link carries no shared plan.');
  let value: unknown;
  try {
    const bytes = await pipe(fromBase64Url(body.slice(FRAGMENT_KEY.length)), new DecompressionStream('deflate-raw'));
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new Error('The share link is damaged or incomplete: ask for the link again.');
  }
  const v = value as Record<string, unknown> | null;
  if (
    v === null ||
    typeof v !== 'object' ||
    v['v'] !== VERSION ||
    typeof v['plan'] !== 'string' ||
    !Array.isArray(v['annotations'])
  ) {
    throw new Error('The share link was made by an incompatible version of gatehouse.');
  }
  return { plan: v['plan'], annotations: v['annotations'].filter(isPlanAnnotation) };
}
