import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ClientKeyConfig } from '../../../src/proxy/config/keys.ts';
import { HttpError } from '../../../src/http/errors.ts';
import { Admission, budgetPeriod, KeyRing, type ClientKey } from '../../../src/proxy/keys.ts';
import { memoryState, type Reservation } from '../../../src/proxy/state/shared.ts';

const sha = (key: string) => createHash('sha256').update(key).digest('hex');
const config = (name: string, more: Partial<ClientKeyConfig> = {}): ClientKeyConfig => ({
  name,
  sha256: sha(`key-of-${name}`),
  models: undefined,
  mcpServers: undefined,
  rpm: undefined,
  tpm: undefined,
  budget: undefined,
  budgetUsd: undefined,
  expiresAt: undefined,
  disabled: false,
  admin: false,
  ...more,
});

describe('KeyRing', () => {
  const ring = new KeyRing('operator-key', [
    config('alice'),
    config('bob', { disabled: true }),
    config('carol', { expiresAt: 2_000 }),
  ]);

  it('finds a key by what was presented: the single api_key is the admin key `default`', () => {
    expect(ring.find(['key-of-alice'], 0)).toMatchObject({ name: 'alice', admin: false });
    expect(ring.find(['wrong', 'operator-key'], 0)).toMatchObject({ name: 'default', admin: true });
    expect(ring.find(['key-of-nobody'], 0)).toBeUndefined();
    expect(ring.find([], 0)).toBeUndefined();
  });

  it('refuses a disabled key, and an expired one from its expiry on', () => {
    expect(ring.find(['key-of-bob'], 0)).toMatchObject({ status: 401, message: 'This API key is disabled' });
    expect(ring.find(['key-of-carol'], 1_999)).toMatchObject({ name: 'carol' });
    const expired = ring.find(['key-of-carol'], 2_000);
    expect(expired).toBeInstanceOf(HttpError);
    expect(expired).toMatchObject({ status: 401, message: 'This API key has expired' });
  });

  it('has no `default` key without an api_key', () => {
    expect(new KeyRing('', [config('alice')]).find([''], 0)).toBeUndefined();
  });
});

describe('budgetPeriod', () => {
  it('is the UTC day or month, ending at the next one', () => {
    const now = Date.UTC(2026, 10, 30, 23, 59);
    expect(budgetPeriod('day', now)).toEqual({
      id: '2026-11-30',
      startsAt: Date.UTC(2026, 10, 30),
      endsAt: Date.UTC(2026, 11, 1),
    });
    expect(budgetPeriod('month', now)).toEqual({
      id: '2026-11',
      startsAt: Date.UTC(2026, 10, 1),
      endsAt: Date.UTC(2026, 11, 1),
    });
    expect(budgetPeriod('month', Date.UTC(2026, 11, 31))).toMatchObject({
      id: '2026-12',
      endsAt: Date.UTC(2027, 0, 1),
    });
  });
});

describe('Admission', () => {
  let time = Date.UTC(2026, 10, 24, 12);
  const admission = () => {
    time = Date.UTC(2026, 10, 24, 12);
    return new Admission(
      memoryState(() => time),
      () => time,
    );
  };
  const key = (more: Partial<ClientKeyConfig>) =>
    new KeyRing('', [config('k', more)]).find(['key-of-k'], 0) as ClientKey;
  /** admit() throws at once for a model not allowed, and rejects for a limit. */
  const refusal = async (admit: () => unknown) => {
    try {
      await admit();
    } catch (error) {
      return error as HttpError;
    }
    throw new Error('admitted');
  };
  /** Admitted, with the reservation its key holds. */
  const admitted = async (a: Admission, k: ClientKey, estimate: number): Promise<Reservation> => {
    const reservation = await a.admit(k, 'm', estimate);
    if (!reservation) throw new Error('no reservation');
    return reservation;
  };

  it('allows only the models its globs match (403 otherwise)', async () => {
    const a = admission();
    const k = key({ models: ['claude-*', 'gpt-4o'] });
    await a.admit(k, 'claude-sonnet-4-5', 10);
    await a.admit(k, 'gpt-4o', 10);
    expect(await refusal(() => a.admit(k, 'gpt-4o-mini', 10))).toMatchObject({
      status: 403,
      kind: 'model_not_allowed',
    });
  });

  it('lets rpm requests through a minute, then 429 with retry-after until the oldest leaves', async () => {
    const a = admission();
    const k = key({ rpm: 3 });
    for (let i = 0; i < 3; i++) {
      // A key that counts no tokens holds no reservation.
      expect(await a.admit(k, 'm', 10)).toBeUndefined();
      time += 1_000;
    }
    const refused = await refusal(() => a.admit(k, 'm', 10));
    // The first request's second leaves the window a minute after it began.
    expect(refused).toMatchObject({ status: 429, headers: { 'retry-after': '57' } });
    time += 57_000;
    await a.admit(k, 'm', 10);
  });

  it('never says more than retry-after: 60 for the minute window, even mid-second', async () => {
    const a = admission();
    const k = key({ rpm: 1 });
    time += 500;
    await a.admit(k, 'm', 10);
    expect(await refusal(() => a.admit(k, 'm', 10))).toMatchObject({ status: 429, headers: { 'retry-after': '60' } });
    time += 59_500;
    await a.admit(k, 'm', 10);
  });

  it('requests that are not model requests count toward rpm alone', async () => {
    const a = admission();
    const k = key({ rpm: 2, budget: { tokens: 10, period: 'day' } });
    await a.settle(await admitted(a, k, 0), 50);
    // The budget is spent: model requests are refused, other requests only by rpm.
    expect(await refusal(() => a.admit(k, 'm', 0))).toMatchObject({ status: 429 });
    await a.admitRequest(k);
    expect(await refusal(() => a.admitRequest(k))).toMatchObject({ status: 429, message: /requests per minute/ });
    expect(a.admitRequest(key({}))).toBeUndefined();
  });

  it('refuses once the last minute used up tpm, until those tokens leave the window', async () => {
    const a = admission();
    const k = key({ tpm: 1_000 });
    await a.settle(await admitted(a, k, 100), 600);
    time += 10_000;
    await a.settle(await admitted(a, k, 100), 500);
    expect(await refusal(() => a.admit(k, 'm', 0))).toMatchObject({ status: 429, headers: { 'retry-after': '50' } });
    time += 50_000;
    await a.admit(k, 'm', 0);
  });

  it('reserves the estimate at admission, so requests in flight count against each other', async () => {
    const a = admission();
    const k = key({ tpm: 1_000 });
    const held = [await admitted(a, k, 400), await admitted(a, k, 400), await admitted(a, k, 400)];
    expect(held.map((r) => r.tokens)).toEqual([400, 400, 400]);
    expect(await refusal(() => a.admit(k, 'm', 400))).toMatchObject({ status: 429 });
    // Two answers spent less, one failed: 300 counted.
    await a.settle(held[0] as Reservation, 100);
    await a.settle(held[1] as Reservation, 200);
    await a.settle(held[2] as Reservation, 0);
    await a.admit(k, 'm', 400);
  });

  it('refuses once the budget is spent, until the period ends', async () => {
    const a = admission();
    const k = key({ budget: { tokens: 100, period: 'day' } });
    await a.settle(await admitted(a, k, 0), 99);
    await a.settle(await admitted(a, k, 0), 1);
    const refused = await refusal(() => a.admit(k, 'm', 0));
    expect(refused).toMatchObject({ status: 429, headers: { 'retry-after': String(12 * 3600) } });
    expect(refused.message).toContain('token budget');
    time = Date.UTC(2026, 10, 25);
    await a.admit(k, 'm', 0);
  });

  it('refuses once the dollar budget is spent, until the period ends; unknown costs count nothing', async () => {
    const a = admission();
    const k = key({ budgetUsd: { usd: 1.5, period: 'month' } });
    await a.settle(await admitted(a, k, 0), 10_000, 1.2);
    await a.settle(await admitted(a, k, 0), 10_000, null);
    await a.settle(await admitted(a, k, 0), 10, 0.3);
    const refused = await refusal(() => a.admit(k, 'm', 0));
    // From noon on the 24th of November to the 1st of December.
    expect(refused).toMatchObject({ status: 429, headers: { 'retry-after': String(6.5 * 24 * 3600) } });
    expect(refused.message).toContain('dollar budget');
    time = Date.UTC(2026, 11, 1);
    await a.admit(k, 'm', 0);
  });

  it('reserves the token estimate in dollars at the input price, and settles it to the cost', async () => {
    // $2 per million tokens: 100,000 tokens reserve $0.20.
    const a = new Admission(
      memoryState(() => time),
      () => time,
      (model, tokens) => (model === 'm' ? (tokens * 2) / 1e6 : null),
    );
    const k = key({ budgetUsd: { usd: 0.5, period: 'day' } });
    const held = [await admitted(a, k, 100_000), await admitted(a, k, 100_000)];
    expect(held.map((r) => r.nanoUsd)).toEqual([200_000_000, 200_000_000]);
    // $0.40 held of $0.50: one more is admitted; then the reservations have reached it.
    const third = await admitted(a, k, 100_000);
    expect((await refusal(() => a.admit(k, 'm', 100_000))).message).toContain('dollar budget');
    // Two answers cost less, one failed: $0.05 counted.
    await a.settle(held[0] as Reservation, 100, 0.02);
    await a.settle(held[1] as Reservation, 100, 0.03);
    await a.settle(third, 0, undefined);
    expect(await a.used(k)).toMatchObject({ usd: 0.05 });
    await a.admit(k, 'm', 100_000);
  });

  it('keeps a token budget and a dollar budget of one period apart', async () => {
    const k = key({ budget: { tokens: 100, period: 'day' }, budgetUsd: { usd: 0.01, period: 'day' } });
    const a = admission();
    await a.settle(await admitted(a, k, 0), 50, 0.01);
    expect((await refusal(() => a.admit(k, 'm', 0))).message).toContain('dollar budget');
    const b = admission();
    await b.settle(await admitted(b, k, 0), 100, 0.001);
    expect((await refusal(() => b.admit(k, 'm', 0))).message).toContain('token budget');
  });

  it('allows the MCP servers its mcp_servers globs match by whole name, every server without any', () => {
    const k = key({ mcpServers: ['git-*', 'docs'] });
    expect(['git-tools', 'docs'].map(k.allowsMcp)).toEqual([true, true]);
    expect(['secrets', 'Docs', 'docs-extra', 'my-git-tools'].map(k.allowsMcp)).toEqual([false, false, false, false]);
    expect(key({}).allowsMcp('secrets')).toBe(true);
  });

  it('names the key in no message', async () => {
    const a = admission();
    const k = key({ rpm: 1, models: ['x'] });
    await a.admit(k, 'x', 0);
    for (const error of [await refusal(() => a.admit(k, 'x', 0)), await refusal(() => a.admit(k, 'y', 0))]) {
      expect(error.message).not.toContain('key-of-k');
    }
  });
});
