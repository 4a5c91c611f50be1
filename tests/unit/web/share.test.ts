import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PlanAnnotation } from '../../../web/src/annotations.ts';
import { decodeShare, encodeShare, fromBase64Url, isShareFragment, toBase64Url } from '../../../web/src/share.ts';

const annotation: PlanAnnotation = { id: 'a1', kind: 'replace', quote: 'Redis', start: 4, end: 9, text: 'a map 🗺️' };

describe('share codec', () => {
  it('round-trips a plan and its annotations through a URL-safe fragment', async () => {
    const plan = '# Plan\n\nUse Redis — or not. <script>x</script>\n'.repeat(50);
    const fragment = await encodeShare({ plan, annotations: [annotation] });
    expect(fragment).toMatch(/^share=[A-Za-z0-9_-]+$/);
    expect(isShareFragment(`#${fragment}`)).toBe(true);
    // Compression pays off on a repetitive plan.
    expect(fragment.length).toBeLessThan(plan.length / 4);
    await expect(decodeShare(`#${fragment}`)).resolves.toEqual({ plan, annotations: [annotation] });
  });

  it('round-trips any text', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 300 }), async (plan) => {
        expect((await decodeShare(await encodeShare({ plan, annotations: [] }))).plan).toBe(plan);
      }),
      { numRuns: 40 },
    );
  });

  it('base64url round-trips bytes of every value, without padding', () => {
    const bytes = Uint8Array.from({ length: 259 }, (_, i) => i % 256);
    const text = toBase64Url(bytes);
    expect(text).not.toMatch(/[+/=]/);
    expect(fromBase64Url(text)).toEqual(bytes);
  });

  it('refuses damaged, foreign and malformed fragments with a readable message', async () => {
    await expect(decodeShare('#other=1')).rejects.toThrow('carries no shared plan');
    await expect(decodeShare('#share=@@@')).rejects.toThrow('damaged');
    await expect(decodeShare('#share=AAAA')).rejects.toThrow('damaged');
    const good = await encodeShare({ plan: 'p', annotations: [] });
    await expect(decodeShare(good.slice(0, -4))).rejects.toThrow(/damaged|incompatible/);
  });

  it('drops annotations that are not well formed', async () => {
    const bytes = new TextEncoder().encode(
      JSON.stringify({ v: 1, plan: 'p', annotations: [annotation, { id: 3 }, null] }),
    );
    const packed = new Uint8Array(
      await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream('deflate-raw'))).arrayBuffer(),
    );
    await expect(decodeShare(`share=${toBase64Url(packed)}`)).resolves.toEqual({
      plan: 'p',
      annotations: [annotation],
    });
  });

  it('names an incompatible version', async () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ v: 99, plan: 'p', annotations: [] }));
    const packed = new Uint8Array(
      await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream('deflate-raw'))).arrayBuffer(),
    );
    await expect(decodeShare(`share=${toBase64Url(packed)}`)).rejects.toThrow('incompatible version');
  });
});
